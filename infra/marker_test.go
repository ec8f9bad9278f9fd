package infra

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// TestTableMarker: the stack writes the table's layout marker with a custom
// resource (one PutItem of outbox.LayoutMarker, conditioned on no marker;
// an update keeps a marker already there), whose role may only put items
// in the table and write its own log group, and every function waits for
// it (design.md §3.10).
func TestTableMarker(t *testing.T) {
	s := defaultStack(t)
	markers := s.resources(TableMarkerType)
	require.Len(t, markers, 1)
	var id string
	var m map[string]any
	for id, m = range markers {
	}
	props := m["Properties"].(map[string]any)
	t.Logf("%s: %s", id, render(props["Create"]))
	var create struct {
		Service, Action          string
		Parameters               map[string]any
		IgnoreErrorCodesMatching string
	}
	require.NoError(t, json.Unmarshal([]byte(render(props["Create"])), &create))
	require.Equal(t, "DynamoDB", create.Service)
	require.Equal(t, "PutItem", create.Action)
	require.Equal(t, "<Table>", create.Parameters["TableName"])
	require.Equal(t, "attribute_not_exists(pk)", create.Parameters["ConditionExpression"])
	require.Equal(t, map[string]any{"pk": map[string]any{"S": "M#table"}, "sk": map[string]any{"S": "M"},
		"lv": map[string]any{"N": "1"}}, create.Parameters["Item"])
	require.Empty(t, create.IgnoreErrorCodesMatching, "a marker already there fails the stack's creation")
	var update struct{ IgnoreErrorCodesMatching string }
	require.NoError(t, json.Unmarshal([]byte(render(props["Update"])), &update))
	require.Equal(t, "ConditionalCheckFailedException", update.IgnoreErrorCodesMatching)
	require.EqualValues(t, outbox.Layout, 1, "the item above is layout 1's")

	for fid, f := range s.ferryFunctions() {
		require.Contains(t, f["DependsOn"], id, "%s waits for the marker", fid)
	}
	// Its provider's role: no managed policy, PutItem on the table, its own
	// log group.
	var stmts []string
	for _, pol := range s.resources("AWS::IAM::Policy") {
		p := pol["Properties"].(map[string]any)
		if !strings.Contains(render(p["Roles"]), "MarkerRole") {
			continue
		}
		for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := st.(map[string]any)
			stmts = append(stmts, render(st["Action"])+" on "+render(st["Resource"]))
		}
	}
	require.ElementsMatch(t, []string{"[\"logs:CreateLogStream\",\"logs:PutLogEvents\"] on <StorageMarkerLogs9FE57669.Arn>",
		"dynamodb:PutItem on <Table.Arn>"}, stmts)
	for rid, r := range s.resources("AWS::IAM::Role") {
		require.NotContains(t, r["Properties"], "ManagedPolicyArns", rid)
	}
}
