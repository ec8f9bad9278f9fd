package webhook

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ferryhq/ferry/internal/outbox"
)

// StatusError describes a non-2xx answer, for logs. It never holds the
// response body.
type StatusError struct {
	StatusCode int
	RetryAfter string
}

func (e *StatusError) Error() string {
	if e.RetryAfter != "" {
		return fmt.Sprintf("webhook receiver answered %d (Retry-After %q)", e.StatusCode, e.RetryAfter)
	}
	return fmt.Sprintf("webhook receiver answered %d", e.StatusCode)
}

// outcome maps a response to an attempt's outcome.
func (a *Adapter) outcome(resp *http.Response) outbox.Result {
	code := resp.StatusCode
	serr := &StatusError{StatusCode: code, RetryAfter: resp.Header.Get("Retry-After")}
	switch {
	case code >= 200 && code <= 299:
		return outbox.Done("")
	case code == http.StatusGone:
		return outbox.Failed(outbox.StopGone, serr)
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		if wait, ok := a.retryAfter(serr.RetryAfter); ok {
			return outbox.Defer(wait, serr)
		}
		if code == http.StatusTooManyRequests {
			// No usable wait (absent, blank, "abc", "1.5"): a Defer of 0
			// backs off from the retry base, doubling (design.md §7.2),
			// as docs/api.md promises.
			return outbox.Defer(0, serr)
		}
		return outbox.Retry(serr)
	case code >= 300 && code <= 399:
		return outbox.Failed(StopRedirect, serr)
	case code >= 400 && code <= 499:
		return outbox.Failed(outbox.StopRejected, serr)
	case code >= 500 && code <= 599:
		return outbox.Retry(serr)
	}
	return outbox.Failed(outbox.StopRejected, serr)
}

// retryAfter reads a Retry-After value: delay-seconds or an HTTP-date (RFC
// 9110 §10.2.3), measured against the injected clock and capped by
// MaxRetryAfter. A date in the past means "now".
func (a *Adapter) retryAfter(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	var wait time.Duration
	if n, err := strconv.ParseUint(v, 10, 63); err == nil {
		if n > uint64(a.opts.MaxRetryAfter/time.Second) {
			return a.opts.MaxRetryAfter, true
		}
		wait = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		wait = t.Sub(a.opts.Clock.Now())
	} else {
		return 0, false
	}
	return min(max(wait, 0), a.opts.MaxRetryAfter), true
}

// drainCapped reads at most limit bytes of the body, then closes it. The
// body is read only so a keep-alive connection can be reused; a receiver
// that sends more (or never stops) costs no more than limit bytes.
func drainCapped(resp *http.Response, limit int64) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, limit))
	_ = resp.Body.Close()
}
