package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/httpapi"
)

// Viewer is who looks at the console. An operator sees every workspace and
// the instance-wide pages (metrics, partitions, the drainer's sweeps); any
// other viewer sees only the actions of its own workspaces, as the HTTP
// API's tenancy rules say (an action of another workspace is "not found").
type Viewer struct {
	ID         string   // for logs: a token's digest name, never a token
	Workspaces []string // sorted; empty for an operator
	Operator   bool
}

// Sees reports whether the viewer may see the actions of workspace ws
// (instance-level actions, with no workspace, only an operator sees).
func (v *Viewer) Sees(ws string) bool {
	if v.Operator {
		return true
	}
	_, found := slices.BinarySearch(v.Workspaces, ws)
	return ws != "" && found
}

// Login finds the viewer a token stands for; nil refuses it.
type Login func(token string) *Viewer

// TokenLogin accepts the operator tokens (every workspace) and whatever
// api accepts as `Authorization: Bearer <token>` (the API's own tokens,
// with their workspaces): the console signs in with the tokens the API
// takes. Tokens are compared through their digests, in constant time.
func TokenLogin(api httpapi.Authenticator, operatorTokens []string) Login {
	digests := make([][sha256.Size]byte, 0, len(operatorTokens))
	for _, t := range operatorTokens {
		digests = append(digests, sha256.Sum256([]byte(t)))
	}
	return func(token string) *Viewer {
		if token == "" || strings.ContainsAny(token, " \t\r\n") {
			return nil
		}
		d := sha256.Sum256([]byte(token))
		operator := false
		for i := range digests {
			if subtle.ConstantTimeCompare(d[:], digests[i][:]) == 1 {
				operator = true
			}
		}
		if operator {
			return &Viewer{ID: "operator", Operator: true}
		}
		if api == nil {
			return nil
		}
		r := &http.Request{Header: http.Header{"Authorization": {"Bearer " + token}}, URL: &url.URL{}}
		p, err := api.Authenticate(r)
		if err != nil || p == nil || len(p.Workspaces) == 0 {
			return nil
		}
		return &Viewer{ID: p.ID, Workspaces: slices.Clone(p.Workspaces)}
	}
}

// NewLoginToken makes a random token for `ferry console`, which signs in
// the one operator who started it.
func NewLoginToken() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// sessionCookie names the cookie of a signed-in browser. It holds a random
// session id, never a token; HttpOnly and SameSite=Strict, so scripts
// cannot read it and other sites cannot make the browser send it.
const sessionCookie = "ferry_console"

// Bounds of the session store: an idle session ends after sessionIdle; at
// most maxSessions are kept (the oldest goes first).
const (
	sessionIdle = 12 * time.Hour
	maxSessions = 1000
)

// session is one signed-in browser: who it is and the token its forms
// must carry (CSRF).
type session struct {
	id      string
	viewer  *Viewer
	csrf    string
	created time.Time
	seen    time.Time
}

// sessions keeps the signed-in browsers in memory: a restart signs every
// browser out.
type sessions struct {
	clk clock.Clock
	mu  sync.Mutex
	m   map[string]*session
}

func newSessions(clk clock.Clock) *sessions {
	return &sessions{clk: clk, m: map[string]*session{}}
}

func randomID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("console: no randomness: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// start opens a session for v.
func (s *sessions) start(v *Viewer) *session {
	now := s.clk.Now()
	ss := &session{id: randomID(), viewer: v, csrf: randomID(), created: now, seen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= maxSessions {
		s.evict(now)
	}
	s.m[ss.id] = ss
	return ss
}

// evict drops the expired sessions, or the oldest when none expired;
// s.mu is held.
func (s *sessions) evict(now time.Time) {
	var oldest *session
	for id, ss := range s.m {
		if now.Sub(ss.seen) > sessionIdle {
			delete(s.m, id)
			continue
		}
		if oldest == nil || ss.created.Before(oldest.created) {
			oldest = ss
		}
	}
	if len(s.m) >= maxSessions && oldest != nil {
		delete(s.m, oldest.id)
	}
}

// find returns the request's live session, or nil.
func (s *sessions) find(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[c.Value]
	if ss == nil {
		return nil
	}
	if now.Sub(ss.seen) > sessionIdle {
		delete(s.m, ss.id)
		return nil
	}
	ss.seen = now
	return ss
}

func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// validCSRF reports whether a form's token is the session's.
func (ss *session) validCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(ss.csrf)) == 1
}

// sameOrigin refuses a change a page of another site asked for: the
// browser says where the request comes from — Sec-Fetch-Site, or, from a
// browser without it, Origin — and it must be this console. A request with
// neither (not a browser) passes on to the CSRF token check.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	case "":
	default:
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}
