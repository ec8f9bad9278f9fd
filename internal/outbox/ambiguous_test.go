package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
)

// lossyDB commits TransactWriteItems calls and then loses the answer of the
// ones lose selects: the ambiguous write DynamoDB clients must handle.
type lossyDB struct {
	DynamoDB
	mu    sync.Mutex
	n     int
	lose  func(n int, in *dynamodb.TransactWriteItemsInput) bool
	calls []string // tokens seen
	// loseClaim, when set, picks the claim updates (design.md §5 step 4)
	// whose answer is lost after they committed.
	loseClaim func(in *dynamodb.UpdateItemInput) bool
}

// isClaimUpdate tells a claim's update of an action (claim.go claimUpdate).
func isClaimUpdate(in *dynamodb.UpdateItemInput) bool {
	return strings.Contains(aws.ToString(in.UpdateExpression), "#ep = :nep")
}

func (l *lossyDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := l.DynamoDB.UpdateItem(ctx, in, o...)
	if err == nil && l.loseClaim != nil && isClaimUpdate(in) && l.loseClaim(in) {
		return nil, errLost
	}
	return out, err
}

var errLost = errors.New("read tcp 127.0.0.1:1: connection reset by peer")

func (l *lossyDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	l.mu.Lock()
	l.n++
	n := l.n
	if in.ClientRequestToken != nil {
		l.calls = append(l.calls, *in.ClientRequestToken)
	}
	l.mu.Unlock()
	out, err := l.DynamoDB.TransactWriteItems(ctx, in, o...)
	if err == nil && l.lose != nil && l.lose(n, in) {
		return nil, errLost
	}
	return out, err
}

// lossySingles loses the first answer of every PutItem and UpdateItem of an
// action row, after committing it.
type lossySingles struct {
	DynamoDB
	mu   sync.Mutex
	seen map[string]bool
}

func (l *lossySingles) first(in map[string]types.AttributeValue, what string) bool {
	if !strings.HasPrefix(getS(in, attrSK), "A#") {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := what + getS(in, attrPK) + getS(in, attrSK)
	if l.seen[k] {
		return false
	}
	l.seen[k] = true
	return true
}

func (l *lossySingles) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := l.DynamoDB.PutItem(ctx, in, o...)
	if err == nil && l.first(in.Item, "put") {
		return nil, errLost
	}
	return out, err
}

func (l *lossySingles) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := l.DynamoDB.UpdateItem(ctx, in, o...)
	if err == nil && l.first(in.Key, "update"+*in.UpdateExpression) {
		return nil, errLost
	}
	return out, err
}

func TestAmbiguousSingleWritesAreReadBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fb := newFaultBundle(t, func(db DynamoDB) DynamoDB { return &lossySingles{DynamoDB: db, seen: map[string]bool{}} })
	ended := &endCount{}
	fb.e.obs = ended
	var ids []string
	for range 3 {
		r, err := fb.e.Enqueue(ctx, EnqueueParams{Kind: "c", WorkspaceID: "ws", Payload: []byte(`{}`)})
		require.NoError(t, err, "a lost answer to our own Put is read back")
		ids = append(ids, r.Action.ID)
	}
	dr, err := fb.e.Sweep(ctx, DrainParams{})
	require.NoError(t, err)
	require.Equal(t, 3, dr.Ended)
	require.Equal(t, 3, ended.n)
	for _, id := range ids {
		a, err := fb.e.ActionGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, StateDONE, a.State)
		require.Equal(t, 1, fb.ran[id], "the fence's lost answer did not stop or repeat the call")
	}
}

type endCount struct {
	NopObserver
	mu sync.Mutex
	n  int
}

func (c *endCount) ActionEnded(*Action, Outcome, StopReason) { c.mu.Lock(); c.n++; c.mu.Unlock() }

type faultBundle struct {
	clk *clock.Manual
	db  *ddblocal.DB
	e   *Engine
	ran map[string]int
	mu  *sync.Mutex
}

type countingAdapter struct {
	mu  *sync.Mutex
	ran map[string]int
}

func (countingAdapter) Spec() KindSpec                         { return KindSpec{Name: "c", Class: AtMostOnce} }
func (countingAdapter) Validate(string, json.RawMessage) error { return nil }
func (c countingAdapter) Execute(_ context.Context, att *Attempt) Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ran[att.Action.ID]++
	return Done("")
}

func newFaultBundle(t *testing.T, wrap func(DynamoDB) DynamoDB, opts ...ddblocal.Option) *faultBundle {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	db := ddblocal.New(append([]ddblocal.Option{ddblocal.WithClock(clk)}, opts...)...)
	fb := &faultBundle{clk: clk, db: db, ran: map[string]int{}, mu: &sync.Mutex{}}
	reg := NewRegistry()
	require.NoError(t, reg.Register(countingAdapter{mu: fb.mu, ran: fb.ran}))
	e, err := New(wrap(db), clk, reg, Config{Table: "ferry", Partitions: 1})
	require.NoError(t, err)
	require.NoError(t, e.EnsureTable(context.Background()))
	fb.e = e
	return fb
}

func TestAmbiguousTransactionsRetryWithTheSameToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var lossy *lossyDB
	fb := newFaultBundle(t, func(db DynamoDB) DynamoDB {
		// Lose the first answer of every transaction: the retry with the same
		// token must be answered as the committed original.
		seen := map[string]bool{}
		lossy = &lossyDB{DynamoDB: db, lose: func(_ int, in *dynamodb.TransactWriteItemsInput) bool {
			tok := *in.ClientRequestToken
			first := !seen[tok]
			seen[tok] = true
			return first
		}}
		return lossy
	})
	var ids []string
	for range 3 {
		r, err := fb.e.Enqueue(ctx, EnqueueParams{Kind: "c", WorkspaceID: "ws", LaneKey: "L", Payload: []byte(`{}`)})
		require.NoError(t, err)
		ids = append(ids, r.Action.ID)
		fb.clk.Advance(time.Millisecond)
	}
	r, err := fb.e.Enqueue(ctx, EnqueueParams{Kind: "c", WorkspaceID: "ws", IdempotencyKey: "k", Payload: []byte(`{}`)})
	require.NoError(t, err)
	require.False(t, r.Existing, "the lost answer of our own write is not a seen key")
	ids = append(ids, r.Action.ID)
	dr, err := fb.e.Sweep(ctx, DrainParams{})
	require.NoError(t, err)
	require.Equal(t, 4, dr.Claimed)
	require.Equal(t, 4, dr.Ended)
	for _, id := range ids {
		a, err := fb.e.ActionGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, StateDONE, a.State)
		require.Equal(t, 1, a.Attempt, "claimed once despite the retried transaction")
		require.Equal(t, 1, fb.ran[id])
	}
	// Every transaction was sent twice with one token.
	count := map[string]int{}
	for _, tok := range lossy.calls {
		count[tok]++
	}
	for tok, n := range count {
		require.Equal(t, 2, n, tok)
	}
}

func TestAmbiguousClaimIsReadBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	claiming := false
	fb := newFaultBundle(t, func(db DynamoDB) DynamoDB {
		// Every answer to the claim's updates is lost: the engine must read
		// the candidates back to learn what it holds.
		return &lossyDB{DynamoDB: db, loseClaim: func(*dynamodb.UpdateItemInput) bool { return claiming }}
	})
	var ids []string
	for range 3 {
		r, err := fb.e.Enqueue(ctx, EnqueueParams{Kind: "c", WorkspaceID: "ws", Payload: []byte(`{}`)})
		require.NoError(t, err)
		ids = append(ids, r.Action.ID)
	}
	v, err := fb.e.FenceTake(ctx, 0, "me", fb.clk.Now().Add(time.Minute))
	require.NoError(t, err)
	claiming = true
	res, err := fb.e.Claim(ctx, 0, ClaimParams{Owner: "me", Version: v, Limit: 10})
	claiming = false
	require.NoError(t, err)
	require.Equal(t, 3, res.Claimed)
	for _, g := range res.Groups {
		for _, a := range g {
			_, err := fb.e.AttemptFinish(ctx, a, Done(""))
			require.NoError(t, err)
		}
	}
}

func TestStaleIndexOnlyProposes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The due index lags the table by a second: right after an action ends,
	// the index still proposes it as ADMITTED.
	fb := newFaultBundle(t, func(db DynamoDB) DynamoDB { return db }, ddblocal.WithIndexLagDuration(time.Second))
	r, err := fb.e.Enqueue(ctx, EnqueueParams{Kind: "c", WorkspaceID: "ws", Payload: []byte(`{}`)})
	require.NoError(t, err)
	fb.clk.Advance(2 * time.Second)
	dr, err := fb.e.Sweep(ctx, DrainParams{})
	require.NoError(t, err)
	require.Equal(t, 1, dr.Ended)
	dr, err = fb.e.Sweep(ctx, DrainParams{})
	require.NoError(t, err)
	require.Zero(t, dr.Claimed, "the stale proposal is refused by the claim's condition")
	require.Equal(t, 1, dr.Conflicts)
	require.Equal(t, 1, fb.ran[r.Action.ID], "at most once")
}

// TestClaimRefusedAfterItsTokenExpiredIsReadBack: a claim update commits
// and its answer is lost; the retry is refused by the epoch the first try
// moved. The refusal must not be taken for "not claimed": the claim reads
// back, holds the action, and the fence's in-flight map keeps it (simulator
// seed 260 of a42ab1d lost such an action when the claim was one
// transaction whose retry came after its token's 10 minutes: EXECUTING, out
// of the due index and the map).
func TestClaimRefusedAfterItsTokenExpiredIsReadBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	claiming := false
	var clk *clock.Manual
	fb := newFaultBundle(t, func(db DynamoDB) DynamoDB {
		seen := map[string]bool{}
		return &lossyDB{DynamoDB: db, loseClaim: func(in *dynamodb.UpdateItemInput) bool {
			k := getS(in.Key, attrSK)
			if !claiming || seen[k] {
				return false
			}
			seen[k] = true
			clk.Advance(11 * time.Minute)
			return true
		}}
	})
	clk = fb.clk
	r, err := fb.e.Enqueue(ctx, EnqueueParams{Kind: "c", WorkspaceID: "ws", Payload: []byte(`{}`)})
	require.NoError(t, err)
	v, err := fb.e.FenceTake(ctx, 0, "me", fb.clk.Now().Add(time.Hour))
	require.NoError(t, err)
	claiming = true
	res, err := fb.e.Claim(ctx, 0, ClaimParams{Owner: "me", Version: v, Limit: 10})
	claiming = false
	require.NoError(t, err)
	require.Equal(t, 1, res.Claimed, "the first try landed: the claim holds the action")
	require.NoError(t, fb.e.FenceRelease(ctx, 0, "me", v))

	a, err := fb.e.ActionGet(ctx, r.Action.ID)
	require.NoError(t, err)
	require.Equal(t, StateEXECUTING, a.State)
	out, err := fb.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("ferry"), Key: key(partitionPK(0), skFence), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	_, tracked := decodeInflight(out.Item)[a.Seq]
	require.True(t, tracked, "the claimed action is in the fence's in-flight map")
}
