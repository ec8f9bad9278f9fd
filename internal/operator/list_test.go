package operator

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// readCounter counts the reads sent to DynamoDB and the items they returned.
type readCounter struct {
	outbox.DynamoDB
	mu                   sync.Mutex
	scans, queries, gets int
	items                int // items every Scan, Query and BatchGetItem returned
}

func (c *readCounter) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := c.DynamoDB.Scan(ctx, in, o...)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scans++
	if err == nil {
		c.items += int(out.ScannedCount)
	}
	return out, err
}

func (c *readCounter) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.DynamoDB.Query(ctx, in, o...)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queries++
	if err == nil {
		c.items += int(out.ScannedCount)
	}
	return out, err
}

func (c *readCounter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := c.DynamoDB.BatchGetItem(ctx, in, o...)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gets++
	if err == nil {
		for _, rows := range out.Responses {
			c.items += len(rows)
		}
	}
	return out, err
}

func (c *readCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scans, c.queries, c.gets, c.items = 0, 0, 0, 0
}

// `ferry actions list --workspace` reads the workspace index and the rows
// it names, as the API's listing does: it costs what the workspace holds,
// never the other workspaces' rows (issue 13; it scanned the table before).
func TestListOfAWorkspaceReadsOnlyItsRows(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for i := range 300 {
		ws := "others"
		if i%50 == 0 {
			ws = "mine" // 6 of them, spread over the table
		}
		tb.enqueue(t, outbox.EnqueueParams{WorkspaceID: ws})
	}
	_, err := tb.s.Engine.Cancel(tb.ctx, tb.enqueue(t, outbox.EnqueueParams{WorkspaceID: "mine"}).ID)
	require.NoError(t, err)
	rc := &readCounter{DynamoDB: tb.db}
	s, err := NewSession(tb.ctx, rc, tb.clk, Target{Table: "ferry", Partitions: 2})
	require.NoError(t, err)
	s.Out, s.Err, s.JSON = tb.out, tb.err, true

	page := func(p ListParams) (ids []string, next string) {
		t.Helper()
		tb.out.Reset()
		require.NoError(t, s.List(tb.ctx, p))
		var got struct {
			Actions []struct {
				ID        string `json:"id"`
				Workspace string `json:"workspace_id"`
			} `json:"actions"`
			NextCursor *string `json:"next_cursor"`
			Examined   int     `json:"examined"`
		}
		require.NoError(t, json.Unmarshal(tb.out.Bytes(), &got))
		for _, a := range got.Actions {
			require.Equal(t, "mine", a.Workspace, "only the workspace's actions")
			ids = append(ids, a.ID)
		}
		if got.NextCursor != nil {
			next = *got.NextCursor
		}
		return ids, next
	}

	rc.reset()
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		ids, next := page(ListParams{WorkspaceID: "mine", Limit: 3, Cursor: cursor})
		all = append(all, ids...)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Len(t, all, 7, "every action of the workspace, once")
	require.Zero(t, rc.scans, "no scan of the table")
	require.LessOrEqual(t, rc.items, 2*7, "the workspace's index entries and rows: %d items read", rc.items)

	rc.reset()
	ids, _ := page(ListParams{WorkspaceID: "mine", State: outbox.StateCANCELLED})
	require.Len(t, ids, 1, "the state filter applies to the rows read")
	require.Zero(t, rc.scans)
	require.LessOrEqual(t, rc.items, 2*7)

	// Every workspace at once: no index serves it, the table is scanned.
	rc.reset()
	_, _ = page(ListParams{State: outbox.StateCANCELLED})
	require.Positive(t, rc.scans)
}
