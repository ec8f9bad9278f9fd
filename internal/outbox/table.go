package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// TableInput is the CreateTableInput of Ferry's table (docs/adr): keys,
// the due, subject and workspace indexes (design.md §3.8), on-demand
// billing and a stream. (The ended index is gone: design.md §3.6.)
func TableInput(name string) *dynamodb.CreateTableInput {
	s := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	ks := func(h, r string) []types.KeySchemaElement {
		return []types.KeySchemaElement{
			{AttributeName: aws.String(h), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(r), KeyType: types.KeyTypeRange},
		}
	}
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			s(attrPK), s(attrSK), s(attrDuePK), s(attrDueSK), s(attrSubPK), s(attrWorkspace), s(attrID),
		},
		KeySchema: ks(attrPK, attrSK),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{
				IndexName: aws.String(IndexDue), KeySchema: ks(attrDuePK, attrDueSK),
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: DueProjection()},
			},
			{
				IndexName: aws.String(IndexSubject), KeySchema: ks(attrSubPK, attrSK),
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			},
			{
				IndexName: aws.String(IndexWorkspace), KeySchema: ks(attrWorkspace, attrID),
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			},
		},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	}
}

// DueProjection lists the non-key attributes the due index carries: what a
// claim and the reaper decide on without reading the base table. The write
// fence (wsa) is left out on purpose: the fence write then costs no index
// write (design.md §3.8). Since claims take rows out of the index (design.md §3.3) no
// reader needs the owner (own), the next attempt (nat: the sort key holds
// it) or the id (the keys give it).
func DueProjection() []string {
	return []string{attrKind, attrVariant, attrWorkspace, attrLane, attrPrev, attrState, attrAttempt,
		attrMax, attrEpoch, attrLease, attrExpires}
}

// EnsureTable creates the table, its indexes, its TTL attribute and its
// marker item (layout and identity, design.md §3.10) when the table does
// not exist yet. An existing table must carry the marker of this build's
// layout (LayoutCheck): any other is refused with a *LayoutError and
// nothing is written to it. On an accepted table TTL is enabled when it is
// not (a run that died between CreateTable and UpdateTimeToLive), so ended
// actions expire.
func (e *Engine) EnsureTable(ctx context.Context) error {
	_, err := e.raw.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: e.table()})
	var nf *types.ResourceNotFoundException
	created := false
	switch {
	case err == nil:
	case !errors.As(err, &nf):
		return fmt.Errorf("error describing table %s: %w", e.cfg.Table, err)
	default:
		_, err := e.raw.CreateTable(ctx, TableInput(e.cfg.Table))
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("error creating table %s: %w", e.cfg.Table, err)
		}
		created = err == nil
	}
	// A real table takes a while to become ACTIVE; wait for it.
	w := dynamodb.NewTableExistsWaiter(describer{e.raw})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: e.table()}, tableWait); err != nil {
		return fmt.Errorf("error waiting for table %s: %w", e.cfg.Table, err)
	}
	if created {
		if created, err = e.createMarker(ctx); err != nil {
			return err
		}
		e.layout.ok.Store(false) // read the marker that stands
	}
	if err := e.LayoutCheck(ctx); err != nil {
		return err
	}
	if err := e.enableTTL(ctx); err != nil {
		return err
	}
	if created {
		return e.createPartitionMap(ctx)
	}
	return nil
}

// enableTTL turns TTL on the `ttl` attribute on.
func (e *Engine) enableTTL(ctx context.Context) error {
	_, err := e.db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               e.table(),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attrTTL), Enabled: aws.Bool(true)},
	})
	var api smithy.APIError
	if err != nil && errors.As(err, &api) && api.ErrorCode() == "ValidationException" &&
		strings.Contains(api.ErrorMessage(), "already enabled") {
		err = nil // DynamoDB refuses to enable TTL twice; that is the state we want
	}
	if err != nil {
		return fmt.Errorf("error enabling TTL on %s: %w", e.cfg.Table, err)
	}
	return nil
}

type describer struct{ db DynamoDB }

func (d describer) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return d.db.DescribeTable(ctx, in, o...)
}

const tableWait = 5 * time.Minute
