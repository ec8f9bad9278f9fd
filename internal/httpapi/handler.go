package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/version"
)

// Options configure New.
type Options struct {
	Outbox Outbox        // required
	Auth   Authenticator // required
	Clock  clock.Clock   // required: expires_at must lie ahead of it
	Logger *slog.Logger  // default: discard
	Limits Limits        // zero fields: 256 KiB body, 200 KiB payload
	// OnEnqueued, when set, is called after actions were enqueued (new ones
	// only); `ferry dev` wakes its drainer with it.
	OnEnqueued func(actions []outbox.Action)
	// Health, when set, checks that DynamoDB can be used (Engine.Ping):
	// GET /healthz answers 503 with a reason while it fails. It runs at
	// most once per HealthTTL (default 2 s), for at most HealthTimeout
	// (default 2 s).
	Health        func(context.Context) error
	HealthTTL     time.Duration
	HealthTimeout time.Duration
}

// Default limits (API.md).
const (
	DefaultMaxBody    = 256 * 1024
	DefaultMaxPayload = outbox.DefaultMaxPayload
	// DefaultListLimit and MaxListLimit bound GET /v1/actions?limit=.
	DefaultListLimit = 50
	MaxListLimit     = 100
	// maxCursorBytes bounds the opaque list cursor.
	maxCursorBytes = 2048
)

// Handler is the HTTP API.
type Handler struct {
	opts   Options
	mux    *http.ServeMux
	routes []route
	health *healthCheck // nil: /healthz says only that the API runs
}

// route is one operation of the API: the router and the OpenAPI test both
// read this table.
type route struct {
	Method   string
	Path     string // ServeMux pattern path, e.g. /v1/actions/{id}
	Auth     bool
	Statuses []int // every status the operation answers
	serve    func(h *Handler, w http.ResponseWriter, r *http.Request, p *Principal) (int, any, error)
}

// authStatuses are what every authenticated route can answer besides its
// own statuses (they all use DynamoDB: 429 when it throttles, 503 when it
// cannot be reached); every route can answer 308 and 500.
var authStatuses = []int{http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusServiceUnavailable}

func routeTable() []route {
	return []route{
		{Method: http.MethodPost, Path: "/v1/actions", Auth: true,
			Statuses: []int{200, 201, 400, 403, 408, 413, 422}, serve: (*Handler).enqueue},
		{Method: http.MethodPost, Path: "/v1/actions:batch", Auth: true,
			Statuses: []int{201, 400, 403, 408, 413, 422}, serve: (*Handler).enqueueBatch},
		{Method: http.MethodGet, Path: "/v1/actions/{id}", Auth: true,
			Statuses: []int{200, 400, 404}, serve: (*Handler).get},
		{Method: http.MethodGet, Path: "/v1/actions", Auth: true,
			Statuses: []int{200, 400, 403}, serve: (*Handler).list},
		{Method: http.MethodPost, Path: "/v1/actions/{id}/admit", Auth: true,
			Statuses: []int{200, 400, 404, 408, 409, 413}, serve: (*Handler).admit},
		{Method: http.MethodPost, Path: "/v1/actions/{id}/cancel", Auth: true,
			Statuses: []int{200, 400, 404, 408, 409, 413}, serve: (*Handler).cancel},
		{Method: http.MethodDelete, Path: "/v1/subjects/{subject_id}", Auth: true,
			Statuses: []int{200, 400, 403}, serve: (*Handler).erase},
		{Method: http.MethodGet, Path: "/v1/openapi.json", Statuses: []int{200}, serve: (*Handler).openAPI},
		{Method: http.MethodGet, Path: "/healthz", Statuses: []int{200, 503}, serve: (*Handler).healthz},
	}
}

// New returns the API handler.
func New(opts Options) (*Handler, error) {
	switch {
	case opts.Outbox == nil:
		return nil, errors.New("httpapi: Options.Outbox is required")
	case opts.Auth == nil:
		return nil, errors.New("httpapi: Options.Auth is required")
	case opts.Clock == nil:
		return nil, errors.New("httpapi: Options.Clock is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Limits.MaxBody <= 0 {
		opts.Limits.MaxBody = DefaultMaxBody
	}
	if opts.Limits.MaxPayload <= 0 {
		opts.Limits.MaxPayload = DefaultMaxPayload
	}
	h := &Handler{opts: opts, mux: http.NewServeMux(), routes: routeTable()}
	if opts.Health != nil {
		h.health = &healthCheck{check: opts.Health, clock: opts.Clock,
			ttl: cmp.Or(opts.HealthTTL, DefaultHealthTTL), timeout: cmp.Or(opts.HealthTimeout, DefaultHealthTimeout)}
	}
	for _, rt := range h.routes {
		h.mux.Handle(rt.Method+" "+rt.Path, h.wrap(rt))
	}
	return h, nil
}

// ServeHTTP implements http.Handler. Requests no route matches answer a JSON
// 404, or 405 with Allow when another method would match; a path that is
// not in canonical form ("//v1/actions/x", "/v1/./actions") a JSON 308 to
// its canonical form.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if clean, ok := canonicalPath(r); !ok {
		// net/http's mux would redirect with an HTML body; the API answers
		// JSON, redirects included.
		loc := clean
		if r.URL.RawQuery != "" {
			loc += "?" + r.URL.RawQuery
		}
		w.Header().Set("Location", loc)
		h.finish(w, r, "", nil, h.opts.Clock.Now(), http.StatusPermanentRedirect, nil,
			&apiError{Status: http.StatusPermanentRedirect, Code: CodeMoved, Message: "the path is not in canonical form: repeat the request at " + loc})
		return
	}
	if _, pattern := h.mux.Handler(r); pattern != "" {
		h.mux.ServeHTTP(w, r)
		return
	}
	var allow []string
	for _, rt := range h.routes {
		probe := r.Clone(r.Context())
		probe.Method = rt.Method
		if _, pattern := h.mux.Handler(probe); pattern == rt.Method+" "+rt.Path {
			allow = append(allow, rt.Method)
		}
	}
	start := h.opts.Clock.Now()
	if len(allow) > 0 {
		for _, m := range allow {
			w.Header().Add("Allow", m)
		}
		h.finish(w, r, "", nil, start, http.StatusMethodNotAllowed, nil,
			&apiError{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed, Message: r.Method + " is not allowed here"})
		return
	}
	h.finish(w, r, "", nil, start, http.StatusNotFound, nil,
		&apiError{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such route"})
}

func (h *Handler) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := h.opts.Clock.Now()
		var p *Principal
		var status int
		var body any
		var err error
		func() {
			defer func() {
				if v := recover(); v != nil {
					err = fmt.Errorf("panic: %v", v)
				}
			}()
			if rt.Auth {
				var aerr error
				p, aerr = h.opts.Auth.Authenticate(r)
				if p == nil || aerr != nil {
					msg := "no credentials"
					if aerr != nil {
						msg = "credentials refused"
					}
					err = &apiError{Status: http.StatusUnauthorized, Code: CodeUnauthenticated, Message: msg}
					return
				}
			}
			status, body, err = rt.serve(h, w, r, p)
		}()
		h.finish(w, r, rt.Method+" "+rt.Path, p, start, status, body, err)
	})
}

// finish writes the answer and the request's log line. Neither carries the
// body or a payload.
func (h *Handler) finish(w http.ResponseWriter, r *http.Request, pattern string, p *Principal, start time.Time, status int, body any, err error) {
	var ae *apiError
	if err != nil {
		ae = h.toAPIError(r.Context(), err)
		status, body = ae.Status, errorBody{Error: errorDetail{Code: ae.Code, Message: ae.Message, Field: ae.Field}}
		if ae.Status == http.StatusTooManyRequests || ae.Status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(body) // the client has gone if this fails

	attrs := []slog.Attr{
		slog.String("http.method", r.Method),
		slog.String("http.route", pattern),
		slog.Int("http.status", status),
		slog.Int64("duration_ms", h.opts.Clock.Now().Sub(start).Milliseconds()),
	}
	if p != nil {
		attrs = append(attrs, slog.String("principal", p.ID))
	}
	if a, ok := body.(actionJSON); ok {
		attrs = append(attrs, slog.String("action.id", a.ID), slog.String("action.kind", a.Kind))
	}
	if rc, ok := gatewayContext(r); ok && rc.RequestID != "" {
		attrs = append(attrs, slog.String("request_id", rc.RequestID))
	}
	level := slog.LevelInfo
	if ae != nil {
		attrs = append(attrs, slog.String("error.code", ae.Code))
		if ae.Field != "" {
			attrs = append(attrs, slog.String("error.field", ae.Field))
		}
		if status >= 500 {
			level = slog.LevelError
			attrs = append(attrs, slog.String("error", err.Error()))
		}
	}
	h.opts.Logger.LogAttrs(r.Context(), level, "http request", attrs...)
}

// toAPIError maps an error to its answer. Engine errors are mapped in this
// one place; anything unknown is a 500 whose message says nothing of the
// internals (the log line has the error).
func (h *Handler) toAPIError(ctx context.Context, err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var item *outbox.BatchItemError
	if errors.As(err, &item) {
		return inItem(h.toAPIError(ctx, item.Err), fmt.Sprintf("actions[%d]", item.Index))
	}
	var te *outbox.TransitionError
	var ve *outbox.ValidationError
	var pe *outbox.PayloadError
	var tl *outbox.TooLargeError
	var lb *outbox.LaneBusyError
	switch {
	case errors.Is(err, outbox.ErrNotFound):
		return &apiError{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such action"}
	case errors.As(err, &te):
		msg := "the action's state refuses the change"
		if te.From != "" {
			msg = fmt.Sprintf("the action is %s and cannot become %s", te.From, te.To)
		}
		return &apiError{Status: http.StatusConflict, Code: CodeTransition, Message: msg}
	case errors.As(err, &ve):
		return fieldError(ve.Field, "%s", ve.Message)
	case errors.Is(err, outbox.ErrUnknownKind):
		return &apiError{Status: http.StatusUnprocessableEntity, Code: CodeUnknownKind, Field: "kind", Message: "kind: no adapter handles this kind"}
	case errors.As(err, &pe):
		field := "payload"
		if pe.Field != "" {
			field += "." + pe.Field
		}
		return &apiError{Status: http.StatusUnprocessableEntity, Code: CodeInvalidPayload, Field: field, Message: field + ": " + pe.Message}
	case errors.As(err, &tl):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Code: CodePayloadTooLarge, Field: "payload",
			Message: fmt.Sprintf("payload: %d bytes is over the limit of %d bytes", tl.Size, tl.Max)}
	case errors.As(err, &lb):
		return &apiError{Status: http.StatusTooManyRequests, Code: CodeThrottled,
			Message: "the lane is busy: other enqueues into it landed first, and nothing of this request was written; retry after Retry-After, or send the lane's actions together in one POST /v1/actions:batch"}
	case isThrottle(err):
		return &apiError{Status: http.StatusTooManyRequests, Code: CodeThrottled, Message: "the table is busy; retry after a short wait"}
	case isUnavailable(err):
		return &apiError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "DynamoDB cannot be used now (" + unavailableReason(err) + "); retry later (an enqueue with an idempotency key cannot be doubled by its retry); GET /healthz says when it is back"}
	}
	return &apiError{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error"}
}

// canonicalPath returns the request's path as the router matches it (the
// escaped path, so that an escaped "/" or "." stays inside its segment)
// with empty and dot segments removed, and whether it already was so.
func canonicalPath(r *http.Request) (string, bool) {
	p := r.URL.EscapedPath()
	if r.Method == http.MethodConnect || p == "" {
		return p, true
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean, clean == p
}

// inItem names the batch item an error is about: its field, and the
// message, which starts with the field, gain the item's path.
func inItem(ae *apiError, item string) *apiError {
	out := *ae
	msg := ae.Message
	out.Field = item
	if ae.Field != "" {
		msg = strings.TrimPrefix(msg, ae.Field+": ")
		out.Field = item + "." + ae.Field
	}
	out.Message = out.Field + ": " + msg
	return &out
}

// readBody reads at most MaxBody bytes of the request body.
func (h *Handler) readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > int64(h.opts.Limits.MaxBody) {
		return nil, h.bodyTooLarge()
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(h.opts.Limits.MaxBody)+1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil, &apiError{Status: http.StatusRequestTimeout, Code: CodeRequestTimeout,
			Message: "the body did not arrive within the server's read timeout"}
	}
	if err != nil {
		return nil, &apiError{Status: http.StatusBadRequest, Code: CodeMalformedJSON, Message: "could not read the body"}
	}
	if len(body) > h.opts.Limits.MaxBody {
		return nil, h.bodyTooLarge()
	}
	return body, nil
}

func (h *Handler) bodyTooLarge() *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Code: CodeBodyTooLarge,
		Message: fmt.Sprintf("the body is over the limit of %d bytes", h.opts.Limits.MaxBody)}
}

// params turns a decoded request into engine parameters for principal p,
// resolving the workspace. prefix names the request in a batch.
func (h *Handler) params(req *EnqueueRequest, p *Principal, prefix string) (outbox.EnqueueParams, error) {
	ws, err := resolveWorkspace(p, req.WorkspaceID, prefix+"workspace_id")
	if err != nil {
		return outbox.EnqueueParams{}, err
	}
	ep := outbox.EnqueueParams{
		Kind:           req.Kind,
		WorkspaceID:    ws,
		LaneKey:        deref(req.LaneKey),
		IdempotencyKey: deref(req.IdempotencyKey),
		SubjectID:      deref(req.SubjectID),
		Payload:        req.Payload,
	}
	if req.MaxAttempts != nil {
		ep.MaxAttempts = *req.MaxAttempts
	}
	if req.Propose != nil {
		ep.Propose = *req.Propose
	}
	if req.ExpiresAt != nil {
		if !req.ExpiresAt.After(h.opts.Clock.Now()) {
			return outbox.EnqueueParams{}, fieldError(prefix+"expires_at", "must be in the future")
		}
		ep.ExpiresAt = *req.ExpiresAt
	}
	return ep, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// resolveWorkspace picks the workspace of a request: the one asked for if
// the principal has it (else 403), or the principal's only one.
func resolveWorkspace(p *Principal, asked *string, field string) (string, error) {
	if asked != nil {
		if !p.Has(*asked) {
			return "", &apiError{Status: http.StatusForbidden, Code: CodeForbidden, Field: field,
				Message: field + ": the workspace is not one this principal may use"}
		}
		return *asked, nil
	}
	switch len(p.Workspaces) {
	case 0:
		return "", &apiError{Status: http.StatusForbidden, Code: CodeForbidden, Message: "this principal has no workspaces"}
	case 1:
		return p.Workspaces[0], nil
	}
	return "", fieldError(field, "is required: this principal may use several workspaces")
}

func (h *Handler) enqueue(w http.ResponseWriter, r *http.Request, p *Principal) (int, any, error) {
	body, err := h.readBody(r)
	if err != nil {
		return 0, nil, err
	}
	req, err := DecodeEnqueue(body, h.opts.Limits)
	if err != nil {
		return 0, nil, err
	}
	ep, err := h.params(req, p, "")
	if err != nil {
		return 0, nil, err
	}
	res, err := h.opts.Outbox.Enqueue(r.Context(), ep)
	if err != nil {
		return 0, nil, err
	}
	if res.Existing {
		return http.StatusOK, newActionJSON(&res.Action), nil
	}
	h.enqueued([]outbox.Action{res.Action})
	w.Header().Set("Location", "/v1/actions/"+url.PathEscape(res.Action.ID))
	return http.StatusCreated, newActionJSON(&res.Action), nil
}

func (h *Handler) enqueued(actions []outbox.Action) {
	if h.opts.OnEnqueued != nil && len(actions) > 0 {
		h.opts.OnEnqueued(actions)
	}
}

type actionsBody struct {
	Actions []actionJSON `json:"actions"`
}

type listBody struct {
	Actions    []actionJSON `json:"actions"`
	NextCursor *string      `json:"next_cursor"`
}

func (h *Handler) enqueueBatch(_ http.ResponseWriter, r *http.Request, p *Principal) (int, any, error) {
	body, err := h.readBody(r)
	if err != nil {
		return 0, nil, err
	}
	reqs, err := DecodeBatch(body, h.opts.Limits)
	if err != nil {
		return 0, nil, err
	}
	eps := make([]outbox.EnqueueParams, len(reqs))
	for i, req := range reqs {
		if eps[i], err = h.params(req, p, fmt.Sprintf("actions[%d].", i)); err != nil {
			return 0, nil, err
		}
	}
	res, err := h.opts.Outbox.EnqueueBatch(r.Context(), eps)
	if err != nil {
		return 0, nil, err
	}
	out := actionsBody{Actions: make([]actionJSON, len(res))}
	var fresh []outbox.Action
	for i := range res {
		out.Actions[i] = newActionJSON(&res[i].Action)
		if !res[i].Existing {
			fresh = append(fresh, res[i].Action)
		}
	}
	h.enqueued(fresh)
	return http.StatusCreated, out, nil
}

// visibleAction reads an action and hides it unless it belongs to one of
// the principal's workspaces: another workspace's action is "not found",
// so its existence does not leak.
func (h *Handler) visibleAction(r *http.Request, p *Principal) (*outbox.Action, error) {
	id := r.PathValue("id")
	if checkKey("id", id, MaxKeyBytes) != nil {
		return nil, outbox.ErrNotFound
	}
	a, err := h.opts.Outbox.ActionGet(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if a.WorkspaceID == "" || !p.Has(a.WorkspaceID) {
		return nil, outbox.ErrNotFound
	}
	return a, nil
}

func (h *Handler) get(_ http.ResponseWriter, r *http.Request, p *Principal) (int, any, error) {
	if err := checkQuery(r.URL.Query()); err != nil {
		return 0, nil, err
	}
	a, err := h.visibleAction(r, p)
	if err != nil {
		return 0, nil, err
	}
	j := newActionJSON(a)
	d, err := h.opts.Outbox.DeliveryGet(r.Context(), a)
	if err != nil {
		return 0, nil, err
	}
	j.Delivery = newDeliveryJSON(d)
	return http.StatusOK, j, nil
}

// checkQuery refuses query parameters other than those allowed, and
// repeated ones.
func checkQuery(q url.Values, allowed ...string) error {
	for k, vs := range q {
		known := false
		for _, a := range allowed {
			known = known || a == k
		}
		if !known {
			return fieldError(k, "unknown query parameter")
		}
		if len(vs) > 1 {
			return fieldError(k, "given more than once")
		}
	}
	return nil
}

// readEmptyBody accepts an absent body or an empty JSON object: admit and
// cancel take no input.
func (h *Handler) readEmptyBody(r *http.Request) error {
	body, err := h.readBody(r)
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return nil
	}
	if err := scanStrict(body); err != nil {
		return malformed(err)
	}
	// An empty struct makes every key an unknown field.
	var obj struct{}
	return strictUnmarshal(body, &obj, "")
}

func (h *Handler) transition(r *http.Request, p *Principal, do func(context.Context, string) (*outbox.Action, error)) (int, any, error) {
	if err := checkQuery(r.URL.Query()); err != nil {
		return 0, nil, err
	}
	if err := h.readEmptyBody(r); err != nil {
		return 0, nil, err
	}
	a, err := h.visibleAction(r, p)
	if err != nil {
		return 0, nil, err
	}
	a, err = do(r.Context(), a.ID)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, newActionJSON(a), nil
}

func (h *Handler) admit(_ http.ResponseWriter, r *http.Request, p *Principal) (int, any, error) {
	return h.transition(r, p, h.opts.Outbox.Admit)
}

func (h *Handler) cancel(_ http.ResponseWriter, r *http.Request, p *Principal) (int, any, error) {
	return h.transition(r, p, h.opts.Outbox.Cancel)
}

func (h *Handler) list(_ http.ResponseWriter, r *http.Request, p *Principal) (int, any, error) {
	q := r.URL.Query()
	if err := checkQuery(q, "workspace_id", "state", "lane_key", "limit", "cursor"); err != nil {
		return 0, nil, err
	}
	var asked *string
	if q.Has("workspace_id") {
		v := q.Get("workspace_id")
		if err := checkKey("workspace_id", v, MaxKeyBytes); err != nil {
			return 0, nil, err
		}
		asked = &v
	}
	ws, err := resolveWorkspace(p, asked, "workspace_id")
	if err != nil {
		return 0, nil, err
	}
	lp := outbox.ActionListParams{WorkspaceID: ws, Limit: DefaultListLimit}
	if q.Has("state") {
		st := outbox.State(q.Get("state"))
		if !st.Valid() {
			return 0, nil, fieldError("state", "must be one of PROPOSED, ADMITTED, EXECUTING, DONE, UNCERTAIN, FAILED, CANCELLED")
		}
		lp.State = st
	}
	if q.Has("lane_key") {
		lp.LaneKey = q.Get("lane_key")
		if err := checkKey("lane_key", lp.LaneKey, MaxKeyBytes); err != nil {
			return 0, nil, err
		}
	}
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > MaxListLimit {
			return 0, nil, fieldError("limit", "must be an integer between 1 and %d", MaxListLimit)
		}
		lp.Limit = n
	}
	if q.Has("cursor") {
		lp.Cursor = q.Get("cursor")
		if err := checkKey("cursor", lp.Cursor, maxCursorBytes); err != nil {
			return 0, nil, err
		}
	}
	res, err := h.opts.Outbox.ActionList(r.Context(), lp)
	if err != nil {
		return 0, nil, err
	}
	out := listBody{Actions: make([]actionJSON, 0, len(res.Actions))}
	for i := range res.Actions {
		// The engine filters by workspace; this keeps a wrong cursor or
		// filter from ever showing another workspace's action.
		if res.Actions[i].WorkspaceID != ws {
			continue
		}
		out.Actions = append(out.Actions, newActionJSON(&res.Actions[i]))
	}
	out.NextCursor = optString(res.NextCursor)
	return http.StatusOK, out, nil
}

type erasedBody struct {
	Erased int `json:"erased"`
}

func (h *Handler) erase(_ http.ResponseWriter, r *http.Request, p *Principal) (int, any, error) {
	q := r.URL.Query()
	if err := checkQuery(q, "workspace_id"); err != nil {
		return 0, nil, err
	}
	subject := r.PathValue("subject_id")
	if err := checkKey("subject_id", subject, MaxKeyBytes); err != nil {
		return 0, nil, err
	}
	workspaces := p.Workspaces
	if q.Has("workspace_id") {
		v := q.Get("workspace_id")
		if !p.Has(v) {
			return 0, nil, &apiError{Status: http.StatusForbidden, Code: CodeForbidden, Field: "workspace_id",
				Message: "workspace_id: the workspace is not one this principal may use"}
		}
		workspaces = []string{v}
	}
	if len(workspaces) == 0 {
		return 0, nil, &apiError{Status: http.StatusForbidden, Code: CodeForbidden, Message: "this principal has no workspaces"}
	}
	total := 0
	for _, ws := range workspaces {
		n, err := h.opts.Outbox.EraseSubject(r.Context(), ws, subject)
		if err != nil {
			return 0, nil, err
		}
		total += n
	}
	return http.StatusOK, erasedBody{Erased: total}, nil
}

// healthz answers whether the API can serve: 200 while DynamoDB can be
// read, 503 with the reason while it cannot; both name the build's version
// (internal/version).
func (h *Handler) healthz(_ http.ResponseWriter, r *http.Request, _ *Principal) (int, any, error) {
	if h.health == nil {
		return http.StatusOK, healthBody{Status: "ok", Version: version.String()}, nil
	}
	reason, err := h.health.status(r.Context())
	if err != nil {
		h.opts.Logger.LogAttrs(r.Context(), slog.LevelWarn, "health check failed", slog.String("error", err.Error()))
	}
	if reason != "" {
		return http.StatusServiceUnavailable, healthBody{Status: "unavailable", DynamoDB: "unreachable", Reason: reason, Version: version.String()}, nil
	}
	return http.StatusOK, healthBody{Status: "ok", DynamoDB: "reachable", Version: version.String()}, nil
}

func (h *Handler) openAPI(_ http.ResponseWriter, _ *http.Request, _ *Principal) (int, any, error) {
	return http.StatusOK, json.RawMessage(servedOpenAPI()), nil
}
