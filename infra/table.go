package infra

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// This file is the stack's copy of the table of docs/design.md §3: every
// name the engine relies on (keys, indexes, projections, TTL, the stream and
// the drainer's stream filter) is here and nowhere else in infra/, so a
// change of the table is one edit (layout_test.go compares it with the
// engine's TableInput).

// Table attribute names (design.md §3).
const (
	AttrPK     = "pk"
	AttrSK     = "sk"
	AttrTTL    = "ttl"
	AttrDuePK  = "due_pk"
	AttrDueSK  = "due_sk"
	AttrSubPK  = "sub_pk"
	AttrWS     = "ws"
	AttrID     = "id"
	AttrState  = "st"
	StateReady = "ADMITTED"
)

// Global secondary index names (design.md §3.8; the `ended` index is gone: the
// retention journal of design.md §3.6 replaced it).
const (
	IndexDue       = "due"
	IndexSubject   = "subject"
	IndexWorkspace = "workspace"
)

// TableIndex is one global secondary index of the layout: its keys and what
// it projects (nil Include means KEYS_ONLY).
type TableIndex struct {
	Name    string
	HashKey string
	SortKey string
	Include []string
}

// TableIndexes lists the table's global secondary indexes, all sparse, in the
// order they are declared.
var TableIndexes = []TableIndex{
	{
		Name: IndexDue, HashKey: AttrDuePK, SortKey: AttrDueSK,
		// design.md §3.8: without the write fence (wsa); design.md §3.3: without id, nat and own.
		Include: []string{"kind", "var", "ws", "lane", "prev", "st", "att", "max", "ep", "lx", "xa"},
	},
	{Name: IndexSubject, HashKey: AttrSubPK, SortKey: AttrSK},
	// design.md §3.8: a workspace's listing (KEYS_ONLY: written once, by the
	// enqueue's put). A stack updated to it adds the index online.
	{Name: IndexWorkspace, HashKey: AttrWS, SortKey: AttrID},
}

// TableLogicalID is the table's logical id in the template (fixed).
const TableLogicalID = "Table"

// TableStreamView is what the table's stream records carry.
const TableStreamView = awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES

// DrainerStreamFilter is the event-source mapping's filter pattern: only
// records whose new image is an action that became due (has the due index
// key and is ADMITTED) wake the drainer. Lambda does not invoke the drainer
// for the rest, so enqueue bursts of ended or executing rows cost nothing.
func DrainerStreamFilter() string {
	pattern := map[string]any{
		"dynamodb": map[string]any{
			"NewImage": map[string]any{
				AttrDuePK: map[string]any{"S": []any{map[string]any{"exists": true}}},
				AttrState: map[string]any{"S": []any{StateReady}},
			},
		},
	}
	b, err := json.Marshal(pattern)
	if err != nil {
		panic(fmt.Sprintf("encoding the drainer's stream filter: %v", err))
	}
	return string(b)
}

// newTable declares the table of design.md §3 with the durability and encryption
// settings of props.
func newTable(scope constructs.Construct, props *Props, key awskms.IKey) awsdynamodb.Table {
	tp := &awsdynamodb.TableProps{
		TableName:    jsii.String(props.TableName),
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(AttrPK), Type: awsdynamodb.AttributeType_STRING},
		SortKey:      &awsdynamodb.Attribute{Name: jsii.String(AttrSK), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		TimeToLiveAttribute: jsii.String(AttrTTL),
		Stream:              TableStreamView,
		DeletionProtection:  jsii.Bool(!props.DisableDeletionProtection),
		Encryption:          awsdynamodb.TableEncryption_DEFAULT,
	}
	if key != nil {
		tp.Encryption = awsdynamodb.TableEncryption_CUSTOMER_MANAGED
		tp.EncryptionKey = key
	}
	// With deletion protection on, a stack deletion keeps the table (and its
	// data) rather than failing half-way; with it off, the table goes with
	// the stack.
	if props.DisableDeletionProtection {
		tp.RemovalPolicy = awscdk.RemovalPolicy_DESTROY
	} else {
		tp.RemovalPolicy = awscdk.RemovalPolicy_RETAIN
	}
	table := awsdynamodb.NewTable(scope, jsii.String("Table"), tp)
	// The table holds the outbox: its logical id is fixed, so that moving
	// the construct in a later refactor can never make CloudFormation
	// replace it.
	table.Node().DefaultChild().(awsdynamodb.CfnTable).OverrideLogicalId(jsii.String(TableLogicalID))
	for _, ix := range TableIndexes {
		gsi := &awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      jsii.String(ix.Name),
			PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(ix.HashKey), Type: awsdynamodb.AttributeType_STRING},
			SortKey:        &awsdynamodb.Attribute{Name: jsii.String(ix.SortKey), Type: awsdynamodb.AttributeType_STRING},
			ProjectionType: awsdynamodb.ProjectionType_KEYS_ONLY,
		}
		if len(ix.Include) > 0 {
			gsi.ProjectionType = awsdynamodb.ProjectionType_INCLUDE
			gsi.NonKeyAttributes = jsii.Strings(ix.Include...)
		}
		table.AddGlobalSecondaryIndex(gsi)
	}
	return table
}
