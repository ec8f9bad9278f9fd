package console

import (
	"bytes"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

type loginView struct {
	Next    string
	Refused bool
}

// safeNext keeps a sign-in's destination within the console: anything
// else (another site, a scheme, a path outside the console) goes to the
// overview.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return Prefix + "/"
	}
	if u.Path != Prefix && !strings.HasPrefix(u.Path, Prefix+"/") {
		return Prefix + "/"
	}
	return u.RequestURI()
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// loginPage shows the sign-in form; `?token=` signs in at once (the link
// `ferry console` prints).
func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if tok := q.Get("token"); tok != "" {
		h.signIn(w, r, tok, safeNext(q.Get("next")))
		return
	}
	h.showLogin(w, r, http.StatusOK, loginView{Next: safeNext(q.Get("next"))})
}

func (h *Handler) showLogin(w http.ResponseWriter, r *http.Request, status int, lv loginView) {
	var b bytes.Buffer
	if err := h.pages.ExecuteTemplate(&b, "login", view{Data: lv, Opts: &h.opts}); err != nil {
		h.opts.Logger.Error("console: rendering the sign-in page failed", slog.Any("error", err))
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	h.layout(w, r, nil, status, "Sign in", template.HTML(b.String()), "", false) //nolint:gosec // rendered by html/template
}

// loginPost signs in with the form's token. The form comes from this
// console only (sameOrigin): no other site can sign a browser in.
func (h *Handler) loginPost(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		h.renderError(w, r, nil, http.StatusForbidden, "Sign-in refused: the form did not come from this console.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		h.renderError(w, r, nil, http.StatusBadRequest, "The form could not be read.")
		return
	}
	h.signIn(w, r, r.PostForm.Get("token"), safeNext(r.PostForm.Get("next")))
}

func (h *Handler) signIn(w http.ResponseWriter, r *http.Request, token, next string) {
	v := h.opts.Login(token)
	if v == nil {
		h.opts.Logger.Warn("console: sign-in refused")
		h.showLogin(w, r, http.StatusUnauthorized, loginView{Next: next, Refused: true})
		return
	}
	if old := h.sessions.find(r); old != nil {
		h.sessions.end(old.id)
	}
	ss := h.sessions.start(v)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: ss.id, Path: Prefix, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	h.opts.Logger.Info("console: signed in", slog.String("viewer", v.ID))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session (its form carries the CSRF token).
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	ss := h.sessions.find(r)
	if ss != nil {
		r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
		if !sameOrigin(r) || r.ParseForm() != nil || !ss.validCSRF(r.PostForm.Get("csrf")) {
			h.renderError(w, r, ss, http.StatusForbidden, "Sign-out refused: the form did not come from this page.")
			return
		}
		h.sessions.end(ss.id)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}
