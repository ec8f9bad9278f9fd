package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
	"github.com/stretchr/testify/require"
)

func gatewayRequest(body string, authz *events.APIGatewayV2HTTPRequestContextAuthorizerDescription) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "POST /v1/actions", RawPath: "/v1/actions", Body: body,
		Headers: map[string]string{"content-type": "application/json"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: "req-1", Authorizer: authz,
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/v1/actions"},
		},
	}
}

func jwtAuthz(claims map[string]string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
	}
}

func iamAuthz(userARN string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: userARN, CallerID: "AROA:x"},
	}
}

// TestGatewayAuthenticators runs requests through the API Gateway v2
// adapter, as the enqueue function does, with each authorizer's context.
func TestGatewayAuthenticators(t *testing.T) {
	t.Parallel()
	gw := Gateway{
		JWT: &JWTClaim{Claim: "ferry_workspaces"},
		IAM: &IAMPrincipals{Workspaces: map[string][]string{
			"arn:aws:iam::123456789012:role/app":  {"a"},
			"arn:aws:iam::123456789012:user/ops":  {"a", "b"},
			"arn:aws:iam::123456789012:role/junk": {"bad#ws"},
		}},
	}
	for _, tc := range []struct {
		name   string
		auth   Authenticator
		authz  *events.APIGatewayV2HTTPRequestContextAuthorizerDescription
		body   string
		status int
		ws     string
	}{
		{"JWTOneWorkspace", gw, jwtAuthz(map[string]string{"sub": "u1", "ferry_workspaces": "a"}), webhookBody, 201, "a"},
		{"JWTSpaceSeparated", gw, jwtAuthz(map[string]string{"ferry_workspaces": "a b"}), webhookBody, 400, ""},
		{"JWTChosen", gw, jwtAuthz(map[string]string{"ferry_workspaces": "a  b"}), `{"kind":"email","workspace_id":"b","payload":{}}`, 201, "b"},
		{"JWTArrayRendering", gw, jwtAuthz(map[string]string{"ferry_workspaces": "[c]"}), `{"kind":"email","payload":{}}`, 201, "c"},
		{"JWTOtherWorkspace", gw, jwtAuthz(map[string]string{"ferry_workspaces": "a"}), `{"kind":"email","workspace_id":"b","payload":{}}`, 403, ""},
		{"JWTEmptyClaim", gw, jwtAuthz(map[string]string{"ferry_workspaces": ""}), webhookBody, 403, ""},
		{"JWTNoClaim", gw, jwtAuthz(map[string]string{"sub": "u1"}), webhookBody, 401, ""},
		{"JWTCustomClaim", Gateway{JWT: &JWTClaim{Claim: "tenants"}}, jwtAuthz(map[string]string{"tenants": "a", "ferry_workspaces": "b"}), webhookBody, 201, "a"},
		{"IAMUser", gw, iamAuthz("arn:aws:iam::123456789012:user/ops"), `{"kind":"email","workspace_id":"b","payload":{}}`, 201, "b"},
		{"IAMAssumedRole", gw, iamAuthz("arn:aws:sts::123456789012:assumed-role/app/session-1"), webhookBody, 201, "a"},
		{"IAMUnmapped", gw, iamAuthz("arn:aws:iam::123456789012:user/mallory"), webhookBody, 401, ""},
		{"IAMInvalidWorkspacesDropped", gw, iamAuthz("arn:aws:iam::123456789012:role/junk"), webhookBody, 403, ""},
		{"IAMNotConfigured", Gateway{JWT: gw.JWT}, iamAuthz("arn:aws:iam::123456789012:user/ops"), webhookBody, 401, ""},
		{"NoAuthorizer", gw, nil, webhookBody, 401, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			h, err := New(Options{Outbox: b.fake, Auth: tc.auth, Clock: b.clk})
			require.NoError(t, err)
			resp, err := httpadapter.NewV2(h).ProxyWithContext(t.Context(), gatewayRequest(tc.body, tc.authz))
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.StatusCode, resp.Body)
			if tc.ws != "" {
				var a map[string]any
				require.NoError(t, json.Unmarshal([]byte(resp.Body), &a))
				require.Equal(t, tc.ws, a["workspace_id"])
			}
		})
	}
}

// TestGatewayContextCannotBeForged: outside API Gateway (no adapter
// context) headers that look like an authorizer's are ignored.
func TestGatewayContextCannotBeForged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h, err := New(Options{Outbox: b.fake, Auth: Gateway{JWT: &JWTClaim{Claim: "ferry_workspaces"}}, Clock: b.clk})
	require.NoError(t, err)
	r := httptest.NewRequest("POST", "/v1/actions", nil)
	r.Header.Set("X-Golambdaproxy-Apigw-Context", `{"authorizer":{"jwt":{"claims":{"ferry_workspaces":"a"}}}}`)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusUnauthorized, w.Code)
}

func TestBearerTokens(t *testing.T) {
	t.Parallel()
	auth := testAuth(t)
	for _, tc := range []struct {
		name, header string
		ok           bool
		wss          []string
	}{
		{"Valid", "Bearer " + tokAB, true, []string{"a", "b"}},
		{"CaseInsensitiveScheme", "bearer " + tokA, true, []string{"a"}},
		{"Absent", "", false, nil},
		{"WrongToken", "Bearer tok-c", false, nil},
		{"Basic", "Basic dG9rLWE6", false, nil},
		{"NoToken", "Bearer ", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", "/v1/actions", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			p, err := auth.Authenticate(r)
			if !tc.ok {
				require.Nil(t, p)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wss, p.Workspaces)
			require.NotContains(t, p.ID, "tok-", "the principal's name never shows the token")
		})
	}
	_, err := NewBearerTokens(map[string][]string{"t": {"#"}})
	require.Error(t, err)
	_, err = NewBearerTokens(map[string][]string{"t t": {"a"}})
	require.Error(t, err)
}

// TestBearerTokenFingerprintIsKeyed: the name a token is logged under is a
// keyed hash with a key of this process, so a short token cannot be found
// from its log lines offline. Before issue 13 it was the first 32 bits of
// the token's unsalted SHA-256: "a" was logged as token-ca978112.
func TestBearerTokenFingerprintIsKeyed(t *testing.T) {
	t.Parallel()
	name := func() string {
		b, err := NewBearerTokens(map[string][]string{"a": {"ws"}})
		require.NoError(t, err)
		r := httptest.NewRequest(http.MethodGet, "/v1/actions", nil)
		r.Header.Set("Authorization", "Bearer a")
		p, err := b.Authenticate(r)
		require.NoError(t, err)
		require.NotNil(t, p)
		require.Equal(t, []string{"ws"}, p.Workspaces)
		return p.ID
	}
	first, second := name(), name()
	require.NotEqual(t, "token-ca978112", first, "the unsalted SHA-256 of \"a\"")
	require.Regexp(t, `^token-[0-9a-f]{8}$`, first)
	require.NotEqual(t, first, second, "each authenticator keys its fingerprints anew")
}
