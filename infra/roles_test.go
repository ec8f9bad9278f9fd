package infra

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/functionroles"
)

// TestRolesAreTheDerivedRoles compares each function's role in the
// synthesized template with the permissions its code uses
// (internal/functionroles/roles.json, derived from its recorded DynamoDB
// requests): on the table and its indexes, every action it uses and no
// other. Before issue 13 three roles held "dynamodb:TransactWriteItems",
// which is no IAM action, and the enqueue and reaper roles lacked
// dynamodb:ConditionCheckItem, which their ending path sends.
func TestRolesAreTheDerivedRoles(t *testing.T) {
	roles, err := functionroles.Load()
	require.NoError(t, err)
	require.ElementsMatch(t, functionroles.Functions, functionNames(), "every function has derived roles, and no other")
	for _, s := range []*synthesized{defaultStack(t), providersStack(t), jwtStack(t)} {
		table := "<" + s.stack.LogicalID(s.stack.Table) + ".Arn>"
		for _, fn := range Functions {
			got := map[string][]string{}
			for _, st := range s.roleStatements(t, fn) {
				for _, a := range st.Actions {
					require.NotEqual(t, "dynamodb:TransactWriteItems", a, "%s: not an IAM action", fn)
				}
				for _, r := range st.Resources {
					key := ""
					switch {
					case r == table:
						key = functionroles.TableResource
					case strings.HasPrefix(r, table+"/index/"):
						key = strings.TrimPrefix(r, table+"/")
					default:
						continue // the stream, providers, logs, keys, tracing
					}
					got[key] = append(got[key], st.Actions...)
				}
			}
			require.Equal(t, roles[string(fn)], got, "%s: the role's table statements are not the derived ones", fn)
		}
	}
}

func functionNames() []string {
	out := make([]string, len(Functions))
	for i, fn := range Functions {
		out[i] = string(fn)
	}
	return out
}
