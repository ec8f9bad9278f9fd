package devstack

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/outbox"
)

// hangingReceiver blocks every request to /slow until release is closed
// (or the client gives up), and answers anything else 204 at once.
type hangingReceiver struct {
	release chan struct{}

	mu       sync.Mutex
	returned int // /slow requests that ended
}

func (h *hangingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	if r.URL.Path == "/slow" {
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
		h.mu.Lock()
		h.returned++
		h.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

// devLaneIn is a lane key of workspace ws that starts in partition p of n.
func devLaneIn(ws string, p, n int, prefix string) string {
	for i := 0; ; i++ {
		if k := prefix + strconv.Itoa(i); outbox.LanePartition(ws, k, n) == p {
			return k
		}
	}
}

// TestSlowReceiverStallsNoOtherWorkspace is issue 28, item 4 in ferry dev:
// twelve webhooks of wsA to a receiver that never answers, in partitions 0
// to 2, then an email and a webhook of wsB in partition 3. Before, ferry
// dev drained the woken partitions one after another, each blocked ~20 s,
// and wsB's email was DONE after 79.6 s; now each partition is drained by
// its own goroutine, so wsB's actions end while every slow call is still
// blocked.
func TestSlowReceiverStallsNoOtherWorkspace(t *testing.T) {
	t.Parallel()
	rcv := &hangingReceiver{release: make(chan struct{})}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	b := startStack(t, Config{AllowPrivateWebhooks: true, Tokens: []Token{{Token: "dev", Workspaces: []string{"wsA", "wsB"}}}})
	// Cleanups run last first: the slow calls end before the stack stops
	// (it lets attempts in their calls finish) and the receiver closes.
	t.Cleanup(func() { close(rcv.release) })
	n := b.stack.Engine().Config().Partitions
	require.Equal(t, 4, n)

	var slow []string
	for i := range 12 {
		slow = append(slow, `{"workspace_id":"wsA","kind":"webhook","lane_key":"`+devLaneIn("wsA", i%3, n, "a"+strconv.Itoa(i)+"-")+
			`","payload":{"url":"`+srv.URL+`/slow"}}`)
	}
	status, out := b.do(t, http.MethodPost, "/v1/actions:batch", `{"actions":[`+strings.Join(slow, ",")+`]}`)
	require.Equal(t, http.StatusCreated, status, "%v", out)

	var ids []string
	for _, body := range []string{
		`{"workspace_id":"wsB","kind":"email","lane_key":"` + devLaneIn("wsB", 3, n, "mail") + `","payload":{"from":"shop@example.com","to":["ann@example.com"],"subject":"s","text":"t"}}`,
		`{"workspace_id":"wsB","kind":"webhook","lane_key":"` + devLaneIn("wsB", 3, n, "hook") + `","payload":{"url":"` + srv.URL + `/ok"}}`,
	} {
		status, a := b.do(t, http.MethodPost, "/v1/actions", body)
		require.Equal(t, http.StatusCreated, status, "%v", a)
		ids = append(ids, a["id"].(string))
	}
	watchdog := time.After(time.Minute) // never decides a passing run
	for _, id := range ids {
		for {
			status, a := b.do(t, http.MethodGet, "/v1/actions/"+id, "")
			require.Equal(t, http.StatusOK, status, "%v", a)
			if a["state"] == "DONE" {
				break
			}
			select {
			case <-watchdog:
				t.Fatalf("wsB's action %s did not end while wsA's calls were blocked: %v\nlogs:\n%s", id, a, b.logs.String())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	require.Zero(t, rcv.returned, "no slow call had ended: wsB's actions waited for none")
}
