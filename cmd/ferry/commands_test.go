package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFlags pins the command line of API.md: names and defaults.
func TestFlags(t *testing.T) {
	t.Parallel()
	root := newRootCommand()
	find := func(args ...string) map[string]string {
		cmd, _, err := root.Find(args)
		require.NoError(t, err)
		flags := map[string]string{}
		for _, name := range []string{"addr", "token", "partitions", "lease", "write-margin", "retry-base", "clock-skew", "max-deferrals", "max-defer-time", "poll",
			"dynamodb-endpoint", "table", "mail-dir", "allow-private-webhooks", "webhook-secret", "ses", "data-dir"} {
			if f := cmd.Flags().Lookup(name); f != nil {
				flags[name] = f.DefValue
			}
		}
		return flags
	}

	require.Equal(t, map[string]string{
		"addr": "127.0.0.1:8080", "token": "[]", "partitions": "4", "lease": "5m0s", "write-margin": "1m0s",
		"retry-base": "1s", "clock-skew": "0s", "max-deferrals": "50", "max-defer-time": "24h0m0s", "poll": "250ms", "dynamodb-endpoint": "", "table": "ferry", "mail-dir": "./.ferry/mail",
		"allow-private-webhooks": "false", "webhook-secret": "", "ses": "false", "data-dir": "",
	}, find("dev"))
	require.Equal(t, map[string]string{"addr": "127.0.0.1:8000", "data-dir": ""}, find("dynamodb"))
	dyn, _, err := root.Find([]string{"dynamodb"})
	require.NoError(t, err)
	for name, def := range map[string]string{"unprocessed-rate": "0", "throttle-rate": "0", "chaos-seed": "1", "table-status-delay": "1s"} {
		require.Equal(t, def, dyn.Flags().Lookup(name).DefValue, name)
	}
	require.Equal(t, map[string]string{"dynamodb-endpoint": "", "table": "ferry"}, find("table", "create"))
}

func TestDevRefusesBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"dev", "--token", "nobody"},
		{"dev", "--write-margin", "10m"},
		{"dev", "--webhook-secret", "plain"},
		{"dev", "--partitions", "-1"},
		{"dev", "--lease", "5s", "--write-margin", "1s", "--clock-skew", "2s"},
		{"dev", "--max-deferrals", "-1"},
		{"dev", "--max-defer-time", "1ms"},
	} {
		root := newRootCommand()
		root.SetArgs(args)
		require.Error(t, root.Execute(), "%v", args)
	}
}
