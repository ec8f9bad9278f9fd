package infra

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// opsSections splits docs/operations.md's "## The alarms" part into its
// "### " sections: heading -> body.
func opsSections(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	require.NoError(t, err)
	doc := string(raw)
	start := strings.Index(doc, "\n## The alarms\n")
	require.GreaterOrEqual(t, start, 0, "docs/operations.md has no \"## The alarms\"")
	part := doc[start+1:]
	if end := strings.Index(part[2:], "\n## "); end >= 0 {
		part = part[:end+2]
	}
	out := map[string]string{}
	for _, sec := range strings.Split(part, "\n### ")[1:] {
		heading, body, _ := strings.Cut(sec, "\n")
		out[heading] = body
	}
	return out
}

// ferryCommand is an operator command in a code span or a shell block.
var ferryCommand = regexp.MustCompile("(?m)(^|`)ferry (status|actions (list|get|cancel|admit)|subjects erase)\\b")

// TestOperationsDocCoversEveryAlarm keeps docs/operations.md the on-call
// guide of the stack it documents: each alarm the stack declares (the
// default stack and the one with every option) has a section under "The
// alarms" whose heading names it (a function's alarms by their
// `<Function>Errors`/`<Function>Throttles` pattern), that says what it means
// and gives the ferry command that shows the cause.
func TestOperationsDocCoversEveryAlarm(t *testing.T) {
	secs := opsSections(t)
	section := func(id string) (string, string, bool) {
		for h, body := range secs {
			if strings.Contains(h, "`"+id+"`") {
				return h, body, true
			}
		}
		for _, fn := range Functions {
			for _, suffix := range []string{"Errors", "Throttles"} {
				if id == functionID(fn)+suffix {
					for h, body := range secs {
						if strings.Contains(h, "`<Function>"+suffix+"`") {
							return h, body, true
						}
					}
				}
			}
		}
		return "", "", false
	}
	ids := map[string]bool{}
	for _, s := range []*synthesized{defaultStack(t), providersStack(t)} {
		for _, id := range s.stack.AlarmIDs() {
			ids[id] = true
		}
	}
	require.Contains(t, ids, "SeseventsErrors", "the fifth function's alarms are among them")
	for id := range ids {
		h, body, ok := section(id)
		require.True(t, ok, "docs/operations.md, \"The alarms\": no section names the alarm %s", id)
		meaning, _, _ := strings.Cut(strings.TrimSpace(body), "\n\n")
		require.NotEmpty(t, meaning, "%s (%s): what it means", id, h)
		require.Regexp(t, ferryCommand, body, "%s (%s): the command that shows the cause", id, h)
	}
}
