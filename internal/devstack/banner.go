package devstack

import (
	"fmt"
	"strings"
)

// printBanner tells a newcomer what they need: the API, the token, where
// mail goes, the webhook secret and a first curl.
func (s *Stack) printBanner() {
	tok := s.cfg.Tokens[0]
	var b strings.Builder
	fmt.Fprintf(&b, "Ferry dev is running.\n\n")
	fmt.Fprintf(&b, "  API            %s\n", s.URL())
	fmt.Fprintf(&b, "  console        %s  (sign in with a token below%s)\n", s.ConsoleURL(), operatorNote(len(s.cfg.OperatorTokens)))
	for _, t := range s.cfg.Tokens {
		fmt.Fprintf(&b, "  token          %s  (workspaces: %s)\n", t.Token, strings.Join(t.Workspaces, ", "))
	}
	switch {
	case s.cfg.DynamoDBEndpoint == "" && s.cfg.DataDir != "":
		fmt.Fprintf(&b, "  DynamoDB       embedded, data in %s (table %q)\n", s.cfg.DataDir, s.cfg.Table)
	case s.cfg.DynamoDBEndpoint == "":
		fmt.Fprintf(&b, "  DynamoDB       embedded, in memory (table %q)\n", s.cfg.Table)
	default:
		fmt.Fprintf(&b, "  DynamoDB       %s (table %q)\n", s.cfg.DynamoDBEndpoint, s.cfg.Table)
	}
	fmt.Fprintf(&b, "  health         %s/healthz (503 while DynamoDB cannot be used; changes are printed here)\n", s.URL())
	fmt.Fprintf(&b, "  email          %s\n", s.email)
	fmt.Fprintf(&b, "  eventbridge    %s\n", s.events)
	fmt.Fprintf(&b, "  webhook secret %s\n", s.secret)
	if s.cfg.AllowPrivateWebhooks {
		fmt.Fprintf(&b, "  webhooks       may reach loopback and private addresses (--allow-private-webhooks)\n")
	}
	fmt.Fprintf(&b, "\nTry:\n\n")
	fmt.Fprintf(&b, "  curl -s -X POST %s/v1/actions \\\n", s.URL())
	fmt.Fprintf(&b, "    -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \\\n", tok.Token)
	fmt.Fprintf(&b, "    -d '{\"kind\":\"webhook\",\"payload\":{\"url\":\"https://example.com/hook\",\"body\":{\"hello\":\"ferry\"}}}'\n")
	fmt.Fprintf(&b, "\nPress Ctrl-C to stop.\n")
	fmt.Fprint(s.cfg.Stdout, b.String())
}

func operatorNote(n int) string {
	if n == 0 {
		return "; --operator-token for every workspace"
	}
	return ", or an --operator-token for every workspace"
}
