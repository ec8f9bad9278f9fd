package lambdastack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
)

// echoFunction records the event it got and answers with resp.
type echoFunction struct {
	got  events.APIGatewayV2HTTPRequest
	resp string
	ferr string
}

func (e *echoFunction) Invoke(_ context.Context, payload []byte) (Result, error) {
	if err := json.Unmarshal(payload, &e.got); err != nil {
		return Result{}, err
	}
	return Result{Payload: []byte(e.resp), FunctionError: e.ferr}, nil
}

func newTestFront(t *testing.T, fn *echoFunction) *httptest.Server {
	t.Helper()
	tmpl := readTestTemplate(t)
	f := &Front{Routes: tmpl.Routes, Functions: map[string]Invoker{"enqueue": fn}, Local: DefaultLocal,
		Principals: []Principal{{Token: "dev", ARN: "arn:aws:iam::000000000000:user/ferry-local-1",
			Claims: map[string]string{"sub": "ferry-local-1", "ferry_workspaces": "default"}}}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, method, url, token, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Add("X-Multi", "a")
	req.Header.Add("X-Multi", "b")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func TestFrontEventAndResponse(t *testing.T) {
	t.Parallel()
	fn := &echoFunction{resp: `{"statusCode":201,"headers":{"Content-Type":"application/json","X-Id":"7"},"cookies":["a=b"],"body":"{\"ok\":true}"}`}
	srv := newTestFront(t, fn)

	resp, body := do(t, http.MethodPost, srv.URL+"/v1/actions/12-1/admit?x=1&x=2", "dev", `{"a":1}`)
	require.Equal(t, 201, resp.StatusCode)
	require.Equal(t, `{"ok":true}`, body)
	require.Equal(t, "7", resp.Header.Get("X-Id"))
	require.Equal(t, "a=b", resp.Header.Get("Set-Cookie"))

	ev := fn.got
	require.Equal(t, "2.0", ev.Version)
	require.Equal(t, "POST /v1/actions/{id}/admit", ev.RouteKey)
	require.Equal(t, "/v1/actions/12-1/admit", ev.RawPath)
	require.Equal(t, "x=1&x=2", ev.RawQueryString)
	require.Equal(t, map[string]string{"x": "1,2"}, ev.QueryStringParameters)
	require.Equal(t, map[string]string{"id": "12-1"}, ev.PathParameters)
	require.Equal(t, "a,b", ev.Headers["x-multi"], "repeated headers are joined with commas")
	require.Equal(t, `{"a":1}`, ev.Body)
	require.False(t, ev.IsBase64Encoded)
	require.Equal(t, "$default", ev.RequestContext.Stage)
	require.Equal(t, "POST", ev.RequestContext.HTTP.Method)
	require.NotNil(t, ev.RequestContext.Authorizer.IAM, "the template's routes use the IAM authorizer")
	require.Equal(t, "arn:aws:iam::000000000000:user/ferry-local-1", ev.RequestContext.Authorizer.IAM.UserARN)
	require.Nil(t, ev.RequestContext.Authorizer.JWT)
}

func TestFrontGatewayAnswers(t *testing.T) {
	t.Parallel()
	fn := &echoFunction{resp: `{"statusCode":200,"body":"{}"}`}
	srv := newTestFront(t, fn)

	resp, body := do(t, http.MethodGet, srv.URL+"/healthz", "", "")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "an IAM route without credentials")
	require.JSONEq(t, `{"message":"Forbidden"}`, body)

	resp, _ = do(t, http.MethodGet, srv.URL+"/healthz", "unknown", "")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	resp, body = do(t, http.MethodGet, srv.URL+"/nowhere", "dev", "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.JSONEq(t, `{"message":"Not Found"}`, body)

	resp, _ = do(t, http.MethodPut, srv.URL+"/v1/actions", "dev", "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "no route for the method")

	fn.ferr, fn.resp = "Unhandled", `{"errorMessage":"boom"}`
	resp, body = do(t, http.MethodGet, srv.URL+"/healthz", "dev", "")
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.JSONEq(t, `{"message":"Internal Server Error"}`, body)
}

func TestFrontJWTRoute(t *testing.T) {
	t.Parallel()
	fn := &echoFunction{resp: `{"statusCode":200,"body":"ok"}`}
	f := &Front{Routes: []Route{{Method: "GET", Path: "/v1/actions", Function: "enqueue", PayloadFormat: "2.0",
		Authorization: "JWT", JWT: &JWTAuthorizer{Issuer: "https://issuer.example", Audience: []string{"ferry"}}}},
		Functions: map[string]Invoker{"enqueue": fn}, Local: DefaultLocal,
		Principals: []Principal{{Token: "dev", Claims: map[string]string{"sub": "ferry-local-1", "ferry_workspaces": "default"}}}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)

	resp, _ := do(t, http.MethodGet, srv.URL+"/v1/actions", "", "")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, body := do(t, http.MethodGet, srv.URL+"/v1/actions", "dev", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok", body)
	claims := fn.got.RequestContext.Authorizer.JWT.Claims
	require.Equal(t, "default", claims["ferry_workspaces"])
	require.Equal(t, "https://issuer.example", claims["iss"])
	require.Equal(t, "ferry", claims["aud"])
}

func TestMatchPath(t *testing.T) {
	t.Parallel()
	f := &Front{Routes: []Route{
		{Method: "GET", Path: "/v1/actions/{id}"},
		{Method: "GET", Path: "/v1/actions/special"},
		{Method: "ANY", Path: "/files/{proxy+}"},
	}}
	r, params, ok := f.match("GET", "/v1/actions/special")
	require.True(t, ok)
	require.Equal(t, "/v1/actions/special", r.Path, "the more literal route wins")
	require.Empty(t, params)
	r, params, ok = f.match("GET", "/v1/actions/7")
	require.True(t, ok)
	require.Equal(t, "/v1/actions/{id}", r.Path)
	require.Equal(t, map[string]string{"id": "7"}, params)
	_, params, ok = f.match("DELETE", "/files/a/b/c")
	require.True(t, ok)
	require.Equal(t, map[string]string{"proxy": "a/b/c"}, params)
	_, _, ok = f.match("GET", "/v1/actions/7/extra")
	require.False(t, ok)
}
