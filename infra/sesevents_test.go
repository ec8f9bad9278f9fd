package infra

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSESEventRouting pins the delivery evidence's routing: with a
// configuration set, the set gets an EventBridge event destination on the
// default bus for the six event types, and a rule on that bus hands the
// events of Ferry emails of that set to the sesevents function, which
// EventBridge may invoke and nothing else; without one, neither exists and
// the function has no trigger.
func TestSESEventRouting(t *testing.T) {
	s := providersStack(t)
	dests := s.resources("AWS::SES::ConfigurationSetEventDestination")
	require.Len(t, dests, 1)
	for _, d := range dests {
		p := d["Properties"].(map[string]any)
		require.Equal(t, "ferry", p["ConfigurationSetName"])
		ed := p["EventDestination"].(map[string]any)
		require.Equal(t, true, ed["Enabled"])
		require.Equal(t, "ferry-Ferry", ed["Name"])
		require.ElementsMatch(t, []any{"send", "delivery", "bounce", "complaint", "reject", "deliveryDelay"}, ed["MatchingEventTypes"])
		require.Equal(t, "arn:<AWS::Partition>:events:<AWS::Region>:<AWS::AccountId>:event-bus/default",
			render(ed["EventBridgeDestination"].(map[string]any)["EventBusArn"]))
	}

	rule := s.props(t, s.stack.LogicalID(s.stack.SESRule))
	require.NotContains(t, rule, "EventBusName", "the default bus, where SES publishes")
	pattern, err := json.Marshal(rule["EventPattern"])
	require.NoError(t, err)
	require.JSONEq(t, `{
		"source": ["aws.ses"],
		"detail-type": ["Email Sent", "Email Delivered", "Email Bounced", "Email Complaint Received", "Email Rejected", "Email Delivery Delayed"],
		"detail": {"mail": {"tags": {"ses:configuration-set": ["ferry"], "ferry_action_id": [{"exists": true}]}}}
	}`, string(pattern))
	targets := rule["Targets"].([]any)
	require.Len(t, targets, 1)
	fn := s.stack.LogicalID(s.stack.Functions[FunctionSESEvents])
	require.Equal(t, "<"+fn+".Arn>", render(targets[0].(map[string]any)["Arn"]))

	perms := 0
	for _, r := range s.resources("AWS::Lambda::Permission") {
		p := r["Properties"].(map[string]any)
		if render(p["FunctionName"]) != "<"+fn+".Arn>" {
			continue
		}
		perms++
		require.Equal(t, "lambda:InvokeFunction", p["Action"])
		require.Equal(t, "events.amazonaws.com", p["Principal"])
		require.Equal(t, "<"+s.stack.LogicalID(s.stack.SESRule)+".Arn>", render(p["SourceArn"]), "only this rule may invoke it")
	}
	require.Equal(t, 1, perms)
	async := 0
	for _, r := range s.resources("AWS::Lambda::EventInvokeConfig") {
		p := r["Properties"].(map[string]any)
		if render(p["FunctionName"]) == "<"+fn+">" {
			async++
			require.Equal(t, 2.0, p["MaximumRetryAttempts"], "a failed recording is retried")
		}
	}
	require.Equal(t, 1, async)

	// Least privilege, spelled out (roles.json derives it from the
	// handler's calls; this pins what that came to): its evidence rows on
	// the table, no index, no stream, nothing of SES or EventBridge.
	table := "<" + s.stack.LogicalID(s.stack.Table) + ".Arn>"
	var onTable []stmt
	for _, st := range s.roleStatements(t, FunctionSESEvents) {
		for _, a := range st.Actions {
			require.NotRegexp(t, `^(ses|events|sqs|sns|secretsmanager):`, a, "sesevents needs no %s", a)
		}
		if slices.ContainsFunc(st.Resources, func(r string) bool { return strings.HasPrefix(r, table) }) {
			onTable = append(onTable, st)
		}
	}
	require.Equal(t, []stmt{{Actions: []string{"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem"}, Resources: []string{table}}}, onTable)

	d := defaultStack(t)
	require.Empty(t, d.resources("AWS::SES::ConfigurationSetEventDestination"), "no configuration set: nothing to route")
	require.Nil(t, d.stack.SESRule)
	dfn := d.stack.LogicalID(d.stack.Functions[FunctionSESEvents])
	for _, r := range d.resources("AWS::Lambda::Permission") {
		require.NotEqual(t, "<"+dfn+".Arn>", render(r["Properties"].(map[string]any)["FunctionName"]), "nothing may invoke it")
	}
}

// TestDashboardShowsDeliveryEvidence: the dashboard graphs the SES events
// recorded and dropped and the UNCERTAIN emails they confirmed, of this
// stack only.
func TestDashboardShowsDeliveryEvidence(t *testing.T) {
	s := defaultStack(t)
	for _, d := range s.resources("AWS::CloudWatch::Dashboard") {
		body := render(d["Properties"].(map[string]any)["DashboardBody"])
		require.Contains(t, body, `SELECT SUM(UncertainConfirmed) FROM SCHEMA(\"Ferry\", Kind, Stack) WHERE Stack = 'Ferry'`)
		require.Contains(t, body, `SELECT SUM(DeliveryEvents) FROM SCHEMA(\"Ferry\", Status, Stack) WHERE Stack = 'Ferry' GROUP BY Status`)
		require.Contains(t, body, `SELECT SUM(DeliveryEventsDropped) FROM SCHEMA(\"Ferry\", Reason, Stack) WHERE Stack = 'Ferry' GROUP BY Reason`)
	}
}
