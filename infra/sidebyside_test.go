package infra

import (
	"os"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/require"
)

// TestTwoStacksSideBySide synthesizes two Ferry stacks in one app (one
// account and region): each function tells its metrics apart by its own
// stack's name, and each stack's alarms and dashboard read only those.
func TestTwoStacksSideBySide(t *testing.T) {
	out, err := os.MkdirTemp(testAssetDir, "cdk.out-")
	require.NoError(t, err)
	ctx := cdkContext(t)
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out), Context: &ctx})
	tables := map[string]string{"FerryOrders": "ferry-orders", "FerryBilling": "ferry-billing"}
	stacks := map[string]*Stack{}
	for name, table := range tables {
		s, err := NewStack(app, name, Props{AssetDir: testAssetDir, TableName: table})
		require.NoError(t, err)
		stacks[name] = s
	}
	for name, s := range stacks {
		tmpl := *assertions.Template_FromStack(s.Stack, nil).ToJSON()
		syn := &synthesized{stack: s, json: tmpl}
		for _, fn := range Functions {
			env := syn.props(t, s.LogicalID(s.Functions[fn]))["Environment"].(map[string]any)["Variables"].(map[string]any)
			require.Equal(t, name, env[EnvStack], "%s/%s", name, fn)
		}
		for _, id := range s.AlarmIDs() {
			p := syn.props(t, s.LogicalID(s.Alarms[id]))
			require.Equal(t, name+"-"+id, p["AlarmName"])
			if p["Namespace"] == MetricNamespace {
				require.Equal(t, []any{map[string]any{"Name": "Stack", "Value": name}}, p["Dimensions"], "%s/%s", name, id)
			}
			if ms, ok := p["Metrics"].([]any); ok {
				for _, m := range ms {
					if expr, ok := m.(map[string]any)["Expression"].(string); ok && len(expr) > 6 && expr[:6] == "SELECT" {
						require.Contains(t, expr, "WHERE Stack = '"+name+"'", "%s/%s", name, id)
					}
				}
			}
		}
		for _, d := range syn.resources("AWS::CloudWatch::Dashboard") {
			require.Equal(t, name, d["Properties"].(map[string]any)["DashboardName"])
			body := render(d["Properties"].(map[string]any)["DashboardBody"])
			for other := range tables {
				if other != name {
					require.NotContains(t, body, other, "%s's dashboard reads none of %s's metrics", name, other)
				}
			}
		}
	}
}
