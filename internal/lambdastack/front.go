package lambdastack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// Invoker runs one synchronous invocation of a function.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) (Result, error)
}

// Principal is who a local token stands for: the JWT claims API Gateway's
// JWT authorizer would pass on, or the IAM caller its IAM authorizer would.
type Principal struct {
	Token  string
	Claims map[string]string // JWT routes
	ARN    string            // AWS_IAM routes
}

// Front is the HTTP API on loopback: it matches a request to the
// template's routes as API Gateway HTTP APIs do, authorizes it with a local
// token (Authorization: Bearer TOKEN) in place of the route's authorizer,
// invokes the route's function with a payload 2.0 event and maps the answer
// back (status, headers, cookies, body).
type Front struct {
	Routes     []Route
	Functions  map[string]Invoker
	Principals []Principal
	Local      Local
	// Log receives one access line per request (the stage's access log).
	Log func(format string, args ...any)
	// Now is the clock of the events' request times.
	Now func() time.Time
	// MaxBody is API Gateway's payload limit (10 MB).
	MaxBody int64
}

// gatewayError answers as API Gateway does on its own behalf.
func gatewayError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"message":%q}`, message)
}

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	began := f.now()
	status := 0
	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		status = rec.status
		if f.Log != nil {
			f.Log("%s %s %d %s", r.Method, r.URL.Path, status, time.Since(began).Round(time.Millisecond))
		}
	}()
	route, params, ok := f.match(r.Method, r.URL.Path)
	if !ok {
		gatewayError(rec, http.StatusNotFound, "Not Found")
		return
	}
	authz, denied := f.authorize(route, r)
	if denied != 0 {
		msg := map[int]string{http.StatusUnauthorized: "Unauthorized", http.StatusForbidden: "Forbidden"}[denied]
		gatewayError(rec, denied, msg)
		return
	}
	fn, ok := f.Functions[route.Function]
	if !ok {
		gatewayError(rec, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	maxBody := f.MaxBody
	if maxBody == 0 {
		maxBody = 10 << 20
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		gatewayError(rec, http.StatusBadRequest, "Bad Request")
		return
	}
	if int64(len(body)) > maxBody {
		gatewayError(rec, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	ev := f.event(r, route, params, authz, body, began)
	payload, err := json.Marshal(ev)
	if err != nil {
		gatewayError(rec, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	// API Gateway waits 30 s at most for a Lambda integration.
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	res, err := fn.Invoke(ctx, payload)
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		gatewayError(rec, http.StatusServiceUnavailable, "Service Unavailable")
		return
	case err != nil || res.FunctionError != "":
		gatewayError(rec, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	writeV2Response(rec, res.Payload)
}

func (f *Front) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// match finds the route of a request: an exact path first, then the route
// with the most literal segments ({name} matches one segment, {name+} the
// rest), then $default, as HTTP APIs choose.
func (f *Front) match(method, path string) (Route, map[string]string, bool) {
	var best *Route
	var bestParams map[string]string
	bestLiterals := -1
	for i := range f.Routes {
		rt := &f.Routes[i]
		if rt.Path == "$default" || (rt.Method != "ANY" && rt.Method != method) {
			continue
		}
		params, literals, ok := matchPath(rt.Path, path)
		if !ok {
			continue
		}
		// A method match beats ANY at equal specificity.
		score := literals * 2
		if rt.Method == method {
			score++
		}
		if score > bestLiterals {
			best, bestParams, bestLiterals = rt, params, score
		}
	}
	if best != nil {
		return *best, bestParams, true
	}
	for _, rt := range f.Routes {
		if rt.Path == "$default" {
			return rt, nil, true
		}
	}
	return Route{}, nil, false
}

func matchPath(tmpl, path string) (map[string]string, int, bool) {
	ts := strings.Split(strings.Trim(tmpl, "/"), "/")
	ps := strings.Split(strings.Trim(path, "/"), "/")
	params := map[string]string{}
	literals := 0
	for i, t := range ts {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "+}") {
			if i >= len(ps) {
				return nil, 0, false
			}
			params[t[1:len(t)-2]] = strings.Join(ps[i:], "/")
			return params, literals, true
		}
		if i >= len(ps) {
			return nil, 0, false
		}
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if ps[i] == "" {
				return nil, 0, false
			}
			params[t[1:len(t)-1]] = ps[i]
			continue
		}
		if t != ps[i] {
			return nil, 0, false
		}
		literals++
	}
	if len(ps) != len(ts) {
		return nil, 0, false
	}
	return params, literals, true
}

// authorize stands in for the route's authorizer: a bearer token from the
// local map is the principal; no token, or an unknown one, is refused as
// the authorizer would (JWT: 401; IAM: 403).
func (f *Front) authorize(rt Route, r *http.Request) (*events.APIGatewayV2HTTPRequestContextAuthorizerDescription, int) {
	if rt.Authorization == "NONE" || rt.Authorization == "" {
		return nil, 0
	}
	refused := http.StatusUnauthorized
	if rt.Authorization == "AWS_IAM" {
		refused = http.StatusForbidden
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, refused
	}
	var p *Principal
	for i := range f.Principals {
		if f.Principals[i].Token == tok {
			p = &f.Principals[i]
		}
	}
	if p == nil {
		return nil, refused
	}
	switch rt.Authorization {
	case "JWT":
		claims := map[string]string{}
		for k, v := range p.Claims {
			claims[k] = v
		}
		if rt.JWT != nil {
			claims["iss"] = rt.JWT.Issuer
			if len(rt.JWT.Audience) > 0 {
				claims["aud"] = rt.JWT.Audience[0]
			}
		}
		return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims, Scopes: nil},
		}, 0
	case "AWS_IAM":
		if p.ARN == "" {
			return nil, refused
		}
		return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
				AccessKey: "ASIALOCAL", AccountID: f.Local.Account, CallerID: "AIDALOCAL",
				UserARN: p.ARN, UserID: "AIDALOCAL",
			},
		}, 0
	}
	// CUSTOM (Lambda) authorizers are not run locally.
	return nil, http.StatusInternalServerError
}

// event builds the payload 2.0 event API Gateway would send.
func (f *Front) event(r *http.Request, rt Route, params map[string]string, authz *events.APIGatewayV2HTTPRequestContextAuthorizerDescription, body []byte, at time.Time) events.APIGatewayV2HTTPRequest {
	headers := map[string]string{}
	var cookies []string
	for k, vs := range r.Header {
		lk := strings.ToLower(k)
		if lk == "cookie" {
			for _, v := range vs {
				for _, c := range strings.Split(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[lk] = strings.Join(vs, ",")
	}
	headers["host"] = r.Host
	if _, ok := headers["x-forwarded-for"]; !ok {
		headers["x-forwarded-for"] = "127.0.0.1"
	}
	var query map[string]string
	if q := r.URL.Query(); len(q) > 0 {
		query = map[string]string{}
		for k, vs := range q {
			query[k] = strings.Join(vs, ",")
		}
	}
	routeKey := rt.Method + " " + rt.Path
	if rt.Path == "$default" {
		routeKey = "$default"
	}
	if len(params) == 0 {
		params = nil
	}
	reqID := newRequestID()
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              routeKey,
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     routeKey,
			AccountID:    f.Local.Account,
			Stage:        "$default",
			RequestID:    reqID,
			Authorizer:   authz,
			APIID:        "local",
			DomainName:   r.Host,
			DomainPrefix: strings.Split(r.Host, ".")[0],
			Time:         at.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    at.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto,
				SourceIP: sourceIP(r), UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		// Text stays text; anything else travels base64-encoded, as API
		// Gateway does for a body that is not valid UTF-8.
		if utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

func sourceIP(r *http.Request) string {
	host := r.RemoteAddr
	if i := strings.LastIndexByte(host, ':'); i > 0 {
		host = host[:i]
	}
	return strings.Trim(host, "[]")
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeV2Response maps a function's payload 2.0 answer to the HTTP
// response. A payload that is not the response object is the body of a 200
// with content-type application/json, as HTTP APIs infer it.
func writeV2Response(w http.ResponseWriter, payload []byte) {
	var resp events.APIGatewayV2HTTPResponse
	var probe map[string]json.RawMessage
	if json.Unmarshal(payload, &probe) != nil || probe["statusCode"] == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(payload)
		return
	}
	if err := json.Unmarshal(payload, &resp); err != nil {
		gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	keys := make([]string, 0, len(resp.Headers))
	for k := range resp.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.Header().Set(k, resp.Headers[k])
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
		body = b
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}
