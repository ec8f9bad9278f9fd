package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/operator"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/version"
)

// Prefix is where the console is served: every page and asset is under it.
const Prefix = "/console"

// Options configure New.
type Options struct {
	// Engine reads and changes the table. Build it over an
	// *operator.Meter: each page then shows the read units it used.
	Engine *outbox.Engine // required
	Login  Login          // required: who a token stands for
	Clock  clock.Clock    // required
	// Where says where the console runs, for its header ("ferry dev",
	// "ferry local", "table ferry in eu-west-1").
	Where string
	// AllowChanges lets admit and cancel through (with confirmation and a
	// CSRF token); off, the console only reads.
	AllowChanges bool
	// Refresh is how often a page updates itself (0: never).
	Refresh time.Duration
	// Metrics feeds the overview's chart (nil: no chart).
	Metrics Metrics
	// Sweeps lists the drainer's last passes, newest first (nil: the
	// partitions page shows what the claim fences record).
	Sweeps func() []Sweep
	// Attempts tells what this process saw of an action's attempts (nil:
	// the table's record only).
	Attempts func(id string) []AttemptEvent
	// OnAdmitted is called after an admit (ferry dev wakes its drainer).
	OnAdmitted func(a *outbox.Action)
	Logger     *slog.Logger // default: discard
}

// Handler serves the console under Prefix.
type Handler struct {
	opts     Options
	pages    *template.Template
	sessions *sessions
	assets   http.Handler
	mux      *http.ServeMux
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// New returns the console.
func New(opts Options) (*Handler, error) {
	switch {
	case opts.Engine == nil:
		return nil, errors.New("console: Options.Engine is required")
	case opts.Login == nil:
		return nil, errors.New("console: Options.Login is required")
	case opts.Clock == nil:
		return nil, errors.New("console: Options.Clock is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	sub, err := fs.Sub(assetFS, "assets")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	h := &Handler{opts: opts, pages: pages, sessions: newSessions(opts.Clock), assets: newAssets(sub), mux: http.NewServeMux()}
	h.routes()
	return h, nil
}

// WithAPI serves the console under Prefix and everything else with api,
// which keeps its own routing (its answers to non-canonical paths
// included).
func WithAPI(api http.Handler, c *Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == Prefix || strings.HasPrefix(r.URL.Path, Prefix+"/") {
			c.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// page is what one page handler renders.
type page struct {
	Title    string
	Template string // the template of the page's main region
	Data     any
	Status   int // 0: 200
	// redirect, when set, answers 303 to it instead (after a change).
	redirect string
	// still: the page does not update itself (a confirmation, a refusal).
	still bool
}

// pageFunc builds a page for a signed-in viewer.
type pageFunc func(r *http.Request, v *Viewer) (*page, error)

func (h *Handler) routes() {
	h.mux.Handle("GET "+Prefix+"/assets/", http.StripPrefix(Prefix+"/assets", h.assets))
	h.mux.HandleFunc("GET "+Prefix+"/login", h.loginPage)
	h.mux.HandleFunc("POST "+Prefix+"/login", h.loginPost)
	h.mux.HandleFunc("POST "+Prefix+"/logout", h.logout)
	h.mux.HandleFunc("GET "+Prefix, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
	})
	h.mux.Handle("GET "+Prefix+"/{$}", h.signedIn(h.overview))
	h.mux.Handle("GET "+Prefix+"/actions", h.signedIn(h.actions))
	h.mux.Handle("GET "+Prefix+"/actions/{id}", h.signedIn(h.action))
	h.mux.Handle("GET "+Prefix+"/actions/{id}/{verb}", h.signedIn(h.confirm))
	h.mux.Handle("POST "+Prefix+"/actions/{id}/{verb}", h.signedIn(h.change))
	h.mux.Handle("GET "+Prefix+"/lanes", h.signedIn(h.lane))
	h.mux.Handle("GET "+Prefix+"/proposals", h.signedIn(h.proposals))
	h.mux.Handle("GET "+Prefix+"/partitions", h.signedIn(h.partitions))
	h.mux.Handle("GET "+Prefix+"/subjects/erase", h.signedIn(h.eraseConfirm))
	h.mux.Handle("POST "+Prefix+"/subjects/erase", h.signedIn(h.erase))
	h.mux.HandleFunc("GET "+Prefix+"/metrics.json", h.metricsJSON)
}

// ServeHTTP implements http.Handler. Every answer carries the console's
// security headers: a Content-Security-Policy that allows only its own
// scripts, styles and requests (no inline script or style), no framing, no
// referrer to other sites, no sniffing.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: with no-referrer a browser sends
	// `Origin: null` with the console's own forms.
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	if _, pattern := h.mux.Handler(r); pattern == "" {
		h.renderError(w, r, nil, http.StatusNotFound, "There is no such page.")
		return
	}
	h.mux.ServeHTTP(w, r)
}

// signedIn runs f for the request's session, or sends the browser to sign
// in first.
func (h *Handler) signedIn(f pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ss := h.sessions.find(r)
		if ss == nil {
			if r.Header.Get(liveHeader) != "" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next := r.URL.Path
			if r.Method != http.MethodGet {
				next = Prefix + "/"
			} else if r.URL.RawQuery != "" {
				next += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, Prefix+"/login?next="+urlQueryEscape(next), http.StatusSeeOther)
			return
		}
		h.serve(w, r, ss, f)
	})
}

// liveHeader marks a page's own refresh: the answer is its main region
// alone, with an ETag.
const liveHeader = "X-Console-Live"

// serve builds the page with a meter of its own, renders it, and answers
// a refresh whose region did not change with 304.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, ss *session, f pageFunc) {
	began := time.Now()
	um := &operator.UsageMeter{}
	r = r.WithContext(operator.WithUsage(r.Context(), um))
	p, err := f(r, ss.viewer)
	if err != nil {
		h.fail(w, r, ss, err)
		return
	}
	if p.redirect != "" {
		http.Redirect(w, r, p.redirect, http.StatusSeeOther)
		return
	}
	if p.Status == 0 {
		p.Status = http.StatusOK
	}
	var main bytes.Buffer
	if err := h.pages.ExecuteTemplate(&main, p.Template, view{Viewer: ss.viewer, CSRF: ss.csrf, Data: p.Data, Opts: &h.opts, Now: h.opts.Clock.Now()}); err != nil {
		h.opts.Logger.Error("console: rendering failed", slog.String("page", p.Template), slog.Any("error", err))
		h.renderError(w, r, ss, http.StatusInternalServerError, "The page could not be rendered.")
		return
	}
	u := um.Usage()
	took := time.Since(began)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Server-Timing", fmt.Sprintf("app;dur=%.1f", float64(took.Microseconds())/1000))
	w.Header().Set("X-Console-Read-Units", fmt.Sprintf("%.1f", u.ReadUnits))
	if r.Header.Get(liveHeader) != "" {
		sum := sha256.Sum256(main.Bytes())
		etag := `"` + hex.EncodeToString(sum[:12]) + `"`
		w.Header().Set("ETag", etag)
		w.Header().Set("X-Console-Footer", footerText(u, took))
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(p.Status)
		_, _ = w.Write(main.Bytes())
		return
	}
	live := r.Method == http.MethodGet && !p.still
	h.layout(w, r, ss, p.Status, p.Title, template.HTML(main.String()), footerText(u, took), live) //nolint:gosec // main was rendered by html/template
}

// footerText is what a page's footer says of its cost: what DynamoDB
// reported for the page's reads (ReturnConsumedCapacity) and the time the
// server took.
func footerText(u operator.Usage, took time.Duration) string {
	return fmt.Sprintf("This page: %d DynamoDB calls, %.1f read units, %.1f write units; rendered in %s",
		u.Calls, u.ReadUnits, u.WriteUnits, took.Round(100*time.Microsecond))
}

// view is what every template sees.
type view struct {
	Viewer *Viewer
	CSRF   string
	Data   any
	Opts   *Options
	Now    time.Time
}

// layoutView is the layout's data: the page's region rendered already.
type layoutView struct {
	view
	Title   string
	Main    template.HTML
	Footer  string
	Refresh int // seconds; 0: none
	Live    bool
	LiveURL string
	Path    string
	Version string
}

// layout writes a whole page around its main region; live pages (a GET
// with a refresh) update their region by themselves (console.js).
func (h *Handler) layout(w http.ResponseWriter, r *http.Request, ss *session, status int, title string, main template.HTML, footer string, live bool) {
	lv := layoutView{Title: title, Main: main, Footer: footer, Path: r.URL.Path, Version: version.String()}
	lv.Opts, lv.Now = &h.opts, h.opts.Clock.Now()
	if ss != nil {
		lv.Viewer, lv.CSRF = ss.viewer, ss.csrf
		lv.Refresh = int(h.opts.Refresh / time.Second)
		lv.Live, lv.LiveURL = live && lv.Refresh > 0, r.URL.RequestURI()
	}
	var b bytes.Buffer
	if err := h.pages.ExecuteTemplate(&b, "layout", lv); err != nil {
		h.opts.Logger.Error("console: rendering the layout failed", slog.Any("error", err))
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// renderError answers an error page (ss may be nil: signed out).
func (h *Handler) renderError(w http.ResponseWriter, r *http.Request, ss *session, status int, msg string) {
	if r.Header.Get(liveHeader) != "" {
		w.WriteHeader(status)
		return
	}
	var b bytes.Buffer
	_ = h.pages.ExecuteTemplate(&b, "error", view{Data: errorView{Status: status, StatusText: http.StatusText(status), Message: msg}})
	h.layout(w, r, ss, status, http.StatusText(status), template.HTML(b.String()), "", false) //nolint:gosec // rendered by html/template
}

type errorView struct {
	Status     int
	StatusText string
	Message    string
	ExitCode   int
}

// fail answers a page's error: a refusal or a bad request with its
// message, not found as the API says it, anything else as a failure whose
// detail goes to the log.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, ss *session, err error) {
	var ue *userError
	if errors.As(err, &ue) {
		h.renderError(w, r, ss, ue.status, ue.msg)
		return
	}
	var ve *outbox.ValidationError
	if errors.As(err, &ve) {
		h.renderError(w, r, ss, http.StatusBadRequest, ve.Error())
		return
	}
	code := operator.ExitCode(err)
	switch code {
	case operator.ExitNotFound:
		h.renderError(w, r, ss, http.StatusNotFound, "No such action (or it was erased, or its retention ended).")
	case operator.ExitDenied:
		h.renderError(w, r, ss, http.StatusForbidden, "The console's credentials may not read this table: "+operator.Message(err))
	default:
		h.opts.Logger.Error("console: a page failed", slog.String("path", r.URL.Path), slog.Any("error", err))
		h.renderError(w, r, ss, http.StatusBadGateway, "DynamoDB could not be read: the console's log has the error.")
	}
}

// userError is an answer for the person: its message is shown as it is.
type userError struct {
	status int
	msg    string
}

func (e *userError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &userError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// notFound is the answer for an action the viewer may not see: the same
// as for one that does not exist, so its existence does not leak.
var errNotFound = &userError{status: http.StatusNotFound, msg: "No such action (or it was erased, or its retention ended)."}

var errOperatorsOnly = &userError{status: http.StatusForbidden, msg: "This page shows the whole instance: sign in with an operator token to see it."}
