package httpapi

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
)

// Principal is who calls the API, as the authorizer established it, and the
// workspaces it may use.
type Principal struct {
	ID         string   // for logs: token name, JWT subject or IAM ARN
	Workspaces []string // sorted, without duplicates
}

// Has reports whether the principal may use workspace ws.
func (p *Principal) Has(ws string) bool {
	_, found := slices.BinarySearch(p.Workspaces, ws)
	return found
}

// Authenticator finds the principal of a request. It answers (nil, nil) when
// the request carries no principal, and an error when it carries one that
// cannot be accepted; both answer 401.
type Authenticator interface {
	Authenticate(r *http.Request) (*Principal, error)
}

// errBadCredentials is the error of a presented but refused credential.
var errBadCredentials = errors.New("credentials refused")

func newPrincipal(id string, workspaces []string) *Principal {
	var wss []string
	for _, ws := range workspaces {
		// A workspace id that could not come in a body cannot be used;
		// dropping it here keeps one definition of a valid workspace.
		if checkKey("workspace_id", ws, MaxKeyBytes) != nil || checkWorkspace("workspace_id", ws) != nil {
			continue
		}
		wss = append(wss, ws)
	}
	slices.Sort(wss)
	return &Principal{ID: id, Workspaces: slices.Compact(wss)}
}

// BearerTokens authenticates `Authorization: Bearer <token>` against a fixed
// map from token to workspaces (`ferry dev --token TOKEN=WS1,WS2`).
type BearerTokens struct {
	// key keys the tokens' digests: random, made anew by every
	// NewBearerTokens, so the name a token is logged under (a prefix of its
	// digest) cannot be computed, nor a short token recovered, by anyone
	// who reads the logs.
	key    [32]byte
	tokens []bearerToken
}

type bearerToken struct {
	digest     [sha256.Size]byte
	name       string
	workspaces []string
}

// NewBearerTokens returns an Authenticator for the given token → workspaces
// map. Tokens are compared in constant time (through their digests).
func NewBearerTokens(tokens map[string][]string) (*BearerTokens, error) {
	b := &BearerTokens{}
	if _, err := rand.Read(b.key[:]); err != nil {
		return nil, fmt.Errorf("bearer tokens: %w", err)
	}
	i := 0
	for tok, wss := range tokens {
		if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
			return nil, fmt.Errorf("bearer token %d: empty or contains white space", i)
		}
		p := newPrincipal("", wss)
		if len(p.Workspaces) == 0 {
			return nil, fmt.Errorf("bearer token %d: no valid workspaces", i)
		}
		i++
		b.tokens = append(b.tokens, bearerToken{digest: b.digest(tok), workspaces: p.Workspaces})
	}
	// Name tokens by their keyed digest, never by value: the name goes to
	// logs.
	slices.SortFunc(b.tokens, func(x, y bearerToken) int { return strings.Compare(string(x.digest[:]), string(y.digest[:])) })
	for i := range b.tokens {
		b.tokens[i].name = fmt.Sprintf("token-%x", b.tokens[i].digest[:4])
	}
	return b, nil
}

// Authenticate implements Authenticator.
func (b *BearerTokens) Authenticate(r *http.Request) (*Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, nil
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return nil, errBadCredentials
	}
	d := b.digest(tok)
	var match *bearerToken
	for i := range b.tokens {
		if subtle.ConstantTimeCompare(d[:], b.tokens[i].digest[:]) == 1 {
			match = &b.tokens[i]
		}
	}
	if match == nil {
		return nil, errBadCredentials
	}
	return &Principal{ID: match.name, Workspaces: match.workspaces}, nil
}

// digest is the token's HMAC-SHA256 under the authenticator's key.
func (b *BearerTokens) digest(tok string) [sha256.Size]byte {
	mac := hmac.New(sha256.New, b.key[:])
	mac.Write([]byte(tok))
	var d [sha256.Size]byte
	copy(d[:], mac.Sum(nil))
	return d
}

// gatewayContext returns the API Gateway (HTTP API, payload 2.0) request
// context that the Lambda adapter attached to the request.
func gatewayContext(r *http.Request) (events.APIGatewayV2HTTPRequestContext, bool) {
	return core.GetAPIGatewayV2ContextFromContext(r.Context())
}

// JWTClaim authenticates requests that API Gateway's JWT authorizer let
// through: the workspaces are the space-separated list in one claim.
type JWTClaim struct {
	Claim string // e.g. "ferry_workspaces"
}

// Authenticate implements Authenticator.
func (j JWTClaim) Authenticate(r *http.Request) (*Principal, error) {
	rc, ok := gatewayContext(r)
	if !ok || rc.Authorizer == nil || rc.Authorizer.JWT == nil {
		return nil, nil
	}
	claims := rc.Authorizer.JWT.Claims
	v, ok := claims[j.Claim]
	if !ok {
		return nil, fmt.Errorf("JWT has no %s claim: %w", j.Claim, errBadCredentials)
	}
	return newPrincipal(claims["sub"], splitClaim(v)), nil
}

// splitClaim splits a claim into workspaces. The claim is documented as a
// space-separated string; API Gateway renders a JSON array claim as
// "[a b]" or "[a,b]", which is accepted too.
func splitClaim(v string) []string {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		v = v[1 : len(v)-1]
	}
	return strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '"' })
}

// IAMPrincipals authenticates requests that API Gateway's IAM authorizer let
// through, mapping the caller's ARN to workspaces
// (FERRY_IAM_WORKSPACES). An assumed-role session ARN
// (arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION) also matches the role's
// ARN (arn:aws:iam::ACCOUNT:role/ROLE), so configuration can name roles.
type IAMPrincipals struct {
	Workspaces map[string][]string
}

// Authenticate implements Authenticator.
func (m IAMPrincipals) Authenticate(r *http.Request) (*Principal, error) {
	rc, ok := gatewayContext(r)
	if !ok || rc.Authorizer == nil || rc.Authorizer.IAM == nil {
		return nil, nil
	}
	iam := rc.Authorizer.IAM
	for _, arn := range []string{iam.UserARN, roleARN(iam.UserARN), iam.CallerID} {
		if arn == "" {
			continue
		}
		if wss, ok := m.Workspaces[arn]; ok {
			return newPrincipal(arn, wss), nil
		}
	}
	return nil, fmt.Errorf("IAM principal is not mapped to workspaces: %w", errBadCredentials)
}

// roleARN turns an STS assumed-role ARN into its IAM role ARN, or "".
func roleARN(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[2] != "sts" {
		return ""
	}
	res := strings.Split(parts[5], "/")
	if len(res) != 3 || res[0] != "assumed-role" {
		return ""
	}
	return fmt.Sprintf("%s:%s:iam::%s:role/%s", parts[0], parts[1], parts[4], res[1])
}

// Gateway authenticates requests by whichever API Gateway authorizer
// passed them: JWT through JWT, IAM through IAM. A nil field refuses that
// authorizer's requests (401), so a deployment enables only what it
// configured.
type Gateway struct {
	JWT *JWTClaim
	IAM *IAMPrincipals
}

// Authenticate implements Authenticator.
func (g Gateway) Authenticate(r *http.Request) (*Principal, error) {
	rc, ok := gatewayContext(r)
	if !ok || rc.Authorizer == nil {
		return nil, nil
	}
	switch {
	case rc.Authorizer.JWT != nil && g.JWT != nil:
		return g.JWT.Authenticate(r)
	case rc.Authorizer.IAM != nil && g.IAM != nil:
		return g.IAM.Authenticate(r)
	}
	return nil, nil
}
