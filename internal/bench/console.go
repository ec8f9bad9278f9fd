package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ferryhq/ferry/internal/console"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/httpapi"
	"github.com/ferryhq/ferry/internal/operator"
	"github.com/ferryhq/ferry/internal/outbox"
)

// ConsolePage is one web console page (internal/console) rendered against
// a table holding ConsoleActions actions: the server's time to render it
// in this process over the embedded DynamoDB (the median and the slowest
// of consoleRenders renders), the DynamoDB calls and read units its
// footer shows, and its median time again with every DynamoDB call taking
// CallLatency more (what a table on AWS adds; a page's reads overlap where
// the page reads partitions at once).
type ConsolePage struct {
	Page     string
	Viewer   string
	Calls    int
	RRU      float64
	Median   time.Duration
	Max      time.Duration
	Modelled time.Duration // the median with CallLatency per call
}

// consoleDelay, while set, makes every call of the console's table take
// CallLatency more (a real sleep).
var consoleDelay atomic.Bool

// consoleWorkspaces is how many workspaces share the console's table, and
// consoleRenders how many times each page is rendered.
const (
	consoleWorkspaces = 10
	consoleRenders    = 7
)

// ConsoleActions is the size of the console's table, as filled.
var ConsoleActions int

// ConsolePages fills a table of o.Backlog actions (default 100,000) in
// consoleWorkspaces workspaces — every fifth in one of the workspace's
// lanes, one in a hundred a proposal, the rest delivered today but for the
// last 2,000, left due — and renders the console's pages against it, as an
// operator and as one workspace's token.
func ConsolePages(ctx context.Context, o CostOptions, step func(string)) ([]ConsolePage, error) {
	o = o.withDefaults()
	delay := ddblocal.WithFaults(ddblocal.FaultPlanFunc(func(ddblocal.Call) ddblocal.Fault {
		if consoleDelay.Load() {
			return ddblocal.Fault{Delay: CallLatency}
		}
		return ddblocal.Fault{}
	}))
	e, err := newEnv(ctx, envOpts{dbOpts: []ddblocal.Option{delay}})
	if err != nil {
		return nil, err
	}
	dueFrom, err := fillConsoleTable(ctx, e, o, step)
	if err != nil {
		return nil, err
	}
	step("  console: rendering pages")
	h, err := consoleHandler(e)
	if err != nil {
		return nil, err
	}
	op, err := consoleSignIn(h, "op")
	if err != nil {
		return nil, err
	}
	tenant, err := consoleSignIn(h, "tenant")
	if err != nil {
		return nil, err
	}
	pages, err := consolePageURLs(ctx, e, dueFrom)
	if err != nil {
		return nil, err
	}
	var out []ConsolePage
	for _, pg := range pages {
		cookie := op
		if pg.viewer == "workspace ws-3" {
			cookie = tenant
		}
		p, err := renderConsolePage(h, cookie, pg.url)
		if err != nil {
			return nil, fmt.Errorf("console page %s: %w", pg.name, err)
		}
		consoleDelay.Store(true)
		slow, err := renderConsolePage(h, cookie, pg.url)
		consoleDelay.Store(false)
		if err != nil {
			return nil, fmt.Errorf("console page %s: %w", pg.name, err)
		}
		p.Page, p.Viewer, p.Modelled = pg.name, pg.viewer, slow.Median
		out = append(out, p)
	}
	return out, nil
}

// fillConsoleTable enqueues the console's table and delivers all but its
// last 2,000 actions, which it enqueues from the minute it returns.
func fillConsoleTable(ctx context.Context, e *env, o CostOptions, step func(string)) (time.Time, error) {
	pl := payload(o.Payload)
	due := min(2000, o.Backlog/10)
	enqueue := func(from, to int) error {
		for i := from; i < to; i++ {
			p := outbox.EnqueueParams{Kind: KindWebhook, WorkspaceID: fmt.Sprintf("ws-%d", i%consoleWorkspaces), Payload: pl}
			if i%5 == 3 {
				p.LaneKey = fmt.Sprintf("order-%d", i/50)
			}
			if i%100 == 7 {
				p.Propose = true
			}
			if _, err := e.eng.Enqueue(ctx, p); err != nil {
				return err
			}
			if i%10 == 9 {
				e.advance(time.Millisecond)
			}
		}
		return nil
	}
	for from := 0; from < o.Backlog-due; from += 10000 {
		step(fmt.Sprintf("  console: %d of %d actions enqueued and delivered", from, o.Backlog))
		if err := enqueue(from, min(from+10000, o.Backlog-due)); err != nil {
			return time.Time{}, err
		}
		if err := e.sweepUntilIdle(ctx); err != nil {
			return time.Time{}, err
		}
	}
	ConsoleActions = o.Backlog
	now := e.clk.Now()
	dueFrom := now.Truncate(time.Minute).Add(time.Minute)
	e.advance(dueFrom.Sub(now))
	return dueFrom, enqueue(o.Backlog-due, o.Backlog)
}

// consoleHandler is the console over the env's table, with its own engine
// over a meter (as ferry dev builds it): token "tenant" sees workspace
// ws-3, "op" every workspace.
func consoleHandler(e *env) (*console.Handler, error) {
	reg, err := registry(e.prov)
	if err != nil {
		return nil, err
	}
	ce, err := outbox.New(operator.NewMeter(e.db), e.clk, reg, e.cfg)
	if err != nil {
		return nil, err
	}
	auth, err := httpapi.NewBearerTokens(map[string][]string{"tenant": {"ws-3"}})
	if err != nil {
		return nil, err
	}
	return console.New(console.Options{Engine: ce, Login: console.TokenLogin(auth, []string{"op"}), Clock: e.clk, AllowChanges: true})
}

func consoleSignIn(h http.Handler, token string) (string, error) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, console.Prefix+"/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		if c.Value != "" {
			return c.Name + "=" + c.Value, nil
		}
	}
	return "", fmt.Errorf("sign-in with %q answered %d", token, rec.Code)
}

type consoleURL struct{ name, viewer, url string }

// consolePageURLs are the pages measured: the overview of each viewer,
// filtered listings, an action, its lane, the proposals and partitions.
func consolePageURLs(ctx context.Context, e *env, dueFrom time.Time) ([]consoleURL, error) {
	r, err := e.eng.ActionFind(ctx, outbox.ActionFindParams{WorkspaceID: "ws-3", LaneKey: "order-3", Limit: 5})
	if err != nil || len(r.Actions) == 0 {
		return nil, fmt.Errorf("no lane order-3 in ws-3: %v", err)
	}
	a := r.Actions[0]
	window := url.Values{"ws": {"ws-3"}, "state": {"ADMITTED"}, "from": {dueFrom.UTC().Format("2006-01-02T15:04")}}
	const op, ws = "operator", "workspace ws-3"
	return []consoleURL{
		{"overview", op, "/"},
		{"overview", ws, "/"},
		{"actions of ws-3, first page", ws, "/actions?ws=ws-3"},
		{"actions of ws-3 in state ADMITTED (the newest 2,000 of the table are due)", ws, "/actions?ws=ws-3&state=ADMITTED"},
		{"actions of ws-3 in state ADMITTED created since the due ones were (a time window)", ws, "/actions?" + window.Encode()},
		{"actions of every workspace in state PROPOSED (a scan)", op, "/actions?state=PROPOSED"},
		{"an action", ws, "/actions/" + url.PathEscape(a.ID)},
		{"its lane", ws, "/lanes?ws=ws-3&lane=order-3"},
		{"proposals of ws-3", ws, "/proposals"},
		{"partitions", op, "/partitions"},
	}, nil
}

var footerFigures = regexp.MustCompile(`This page: (\d+) DynamoDB calls, ([0-9.]+) read units`)

// renderConsolePage renders one page consoleRenders times and reads its
// footer.
func renderConsolePage(h http.Handler, cookie, path string) (ConsolePage, error) {
	var p ConsolePage
	var took []time.Duration
	for range consoleRenders {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, console.Prefix+path, nil)
		req.Header.Set("Cookie", cookie)
		began := time.Now()
		h.ServeHTTP(rec, req)
		took = append(took, time.Since(began))
		if rec.Code != http.StatusOK {
			return p, fmt.Errorf("answered %d", rec.Code)
		}
		m := footerFigures.FindStringSubmatch(rec.Body.String())
		if m == nil {
			return p, fmt.Errorf("no footer")
		}
		p.Calls, _ = strconv.Atoi(m[1])
		p.RRU, _ = strconv.ParseFloat(m[2], 64)
	}
	slices.Sort(took)
	p.Median, p.Max = took[len(took)/2], took[len(took)-1]
	return p, nil
}
