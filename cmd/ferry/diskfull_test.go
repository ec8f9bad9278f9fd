package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
)

// Issue 28 item 3 on a real full disk: a 4 MiB tmpfs, mounted in a user and
// mount namespace of the child's own (no privilege needed; the test is
// skipped where unprivileged user namespaces are off). The test reaches the
// tmpfs through /proc/<pid>/root.

// tmpfsChild is a ferry child process whose data directory is on a small
// tmpfs.
type tmpfsChild struct {
	cmd  *exec.Cmd // unshare: killing it kills everything in the namespace
	init int       // the namespace's first process (the shell, then sleep), as this process sees it
	mnt  string    // the tmpfs, as the child sees it
	root string    // the tmpfs, as this process reaches it
	line string    // the stdout line the test waited for
}

// startOnTmpfs starts `ferry <args>` (args name the tmpfs as MNT) in new
// user, mount and PID namespaces with a tmpfs of size at a fresh directory,
// and waits for a stdout line matching ready. Killing ferry (kill) leaves
// the namespace, and the tmpfs, until the test ends; then everything in it
// is killed with unshare.
func startOnTmpfs(t *testing.T, size, args string, ready *regexp.Regexp) *tmpfsChild {
	t.Helper()
	ns := []string{"--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child"}
	if err := exec.Command("unshare", append(ns, "true")...).Run(); err != nil {
		t.Skipf("no unprivileged user, mount and PID namespaces here (unshare: %v): a real full disk cannot be made", err)
	}
	mnt := t.TempDir()
	script := `mount -t tmpfs -o size="$2" tmpfs "$0" || exit 1
"$1" -test.run='^$' &
wait
exec sleep 600`
	cmd := exec.Command("unshare", append(ns, "sh", "-c", script, mnt, os.Args[0], size)...)
	cmd.Env = append(os.Environ(), childEnv+"="+strings.ReplaceAll(args, "MNT", mnt))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := &tmpfsChild{cmd: cmd, mnt: mnt}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if ready.MatchString(sc.Text()) {
			c.line = sc.Text()
			go func() {
				for sc.Scan() {
				}
			}()
			c.init = childOf(t, cmd.Process.Pid)
			c.root = fmt.Sprintf("/proc/%d/root%s", c.init, mnt)
			return c
		}
	}
	t.Fatalf("ferry %s printed no line matching %s: %v", args, ready, sc.Err())
	return nil
}

// childOf returns the pid of parent's only child.
func childOf(t *testing.T, parent int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", parent, parent))
	require.NoError(t, err)
	f := strings.Fields(string(b))
	require.Len(t, f, 1, "process %d's children", parent)
	pid, err := strconv.Atoi(f[0])
	require.NoError(t, err)
	return pid
}

// kill sends SIGKILL to ferry (not to the namespace, which keeps the tmpfs).
func (c *tmpfsChild) kill(t *testing.T) {
	t.Helper()
	pid := childOf(t, c.init)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", c.init, c.init))
		return err == nil && len(strings.Fields(string(b))) == 0
	}, 20*time.Second, 10*time.Millisecond, "ferry is gone")
}

func fill(t *testing.T, path string, n int) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, make([]byte, n), 0o644))
}

// TestDataDirDiskFullOnATmpfs: `ferry dynamodb --data-dir` on a full disk
// refuses writes with ServiceUnavailable (503, retryable), keeps serving
// reads, says "degraded" on GET /, takes writes again once space is freed,
// and every acknowledged write is on disk after a SIGKILL (before: every
// call, reads included, answered 500 until a restart and GET / said
// healthy).
func TestDataDirDiskFullOnATmpfs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startOnTmpfs(t, "4m", "dynamodb --addr 127.0.0.1:0 --log-level error --data-dir MNT/ddb", endpointLine)
	endpoint := endpointLine.FindStringSubmatch(c.line)[1]
	fill(t, filepath.Join(c.root, "filler"), 1<<20)
	db := client(t, endpoint)
	noRetry := func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }
	createIDTable(t, db, "full")
	put := func(id int) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("full"), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberN{Value: fmt.Sprint(id)}, "pad": &types.AttributeValueMemberS{Value: strings.Repeat("p", 150<<10)}}}, noRetry)
		return err
	}
	health := func() (int, string) {
		resp, err := http.Get(endpoint + "/")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	var acked []int
	for id := 0; ; id++ {
		err := put(id)
		if err != nil {
			var api smithy.APIError
			require.ErrorAs(t, err, &api)
			require.Equal(t, "ServiceUnavailable", api.ErrorCode(), "%v", err)
			break
		}
		acked = append(acked, id)
		require.Less(t, id, 100, "a 4 MiB disk cannot take 100 items of 150 KB")
	}
	require.NotEmpty(t, acked)
	// Reads with the SDK's default retries, as a client makes them: with
	// retries off, a GetItem on the connection that had just carried the
	// refused 150 KB PutItem sometimes failed inside the client ("use of
	// closed network connection" after the answer's first 4 KB; 6 runs in
	// 30; a raw HTTP/1.1 connection showed the server's bytes whole in 20).
	for _, id := range acked {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("full"),
			Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberN{Value: fmt.Sprint(id)}}})
		require.NoError(t, err, "reads are served while the disk is full")
		require.NotNil(t, out.Item)
	}
	status, body := health()
	require.Equal(t, http.StatusServiceUnavailable, status, body)
	require.Contains(t, body, "degraded")

	require.NoError(t, os.Remove(filepath.Join(c.root, "filler")))
	status, body = health()
	require.Equal(t, http.StatusOK, status, "writes come back once the disk has room: %s", body)
	next := acked[len(acked)-1] + 100
	require.NoError(t, put(next))
	acked = append(acked, next)

	c.kill(t)
	local, err := ddblocal.Open(filepath.Join(c.root, "ddb"))
	require.NoError(t, err)
	defer local.Close()
	for _, id := range acked {
		out, err := local.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("full"),
			Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberN{Value: fmt.Sprint(id)}}})
		require.NoError(t, err)
		require.NotNil(t, out.Item, "acknowledged item %d survives", id)
	}
}

var apiLine = regexp.MustCompile(`^\s*API\s+(http://\S+)`)

// TestDevAPIDiskFullAnswers503: `ferry dev --data-dir` on a full disk
// answers its API's calls 503 unavailable with Retry-After (before: 500
// internal), /healthz says 503, and enqueues work again once space is
// freed.
func TestDevAPIDiskFullAnswers503(t *testing.T) {
	t.Parallel()
	mail := t.TempDir()
	c := startOnTmpfs(t, "4m", "dev --addr 127.0.0.1:0 --log-level error --data-dir MNT/ddb --mail-dir "+mail, apiLine)
	api := apiLine.FindStringSubmatch(c.line)[1]
	fill(t, filepath.Join(c.root, "filler"), 1<<20)
	enqueue := func() *http.Response {
		body := fmt.Sprintf(`{"kind":"email","payload":{"from":"shop@example.com","to":["ann@example.com"],"subject":"s","text":%q}}`, strings.Repeat("t", 100<<10))
		req, err := http.NewRequest(http.MethodPost, api+"/v1/actions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer dev")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	var last *http.Response
	for i := 0; i < 100; i++ {
		last = enqueue()
		if last.StatusCode != http.StatusCreated {
			break
		}
	}
	require.Equal(t, http.StatusServiceUnavailable, last.StatusCode, "an enqueue on a full disk")
	require.Equal(t, "1", last.Header.Get("Retry-After"))
	resp, err := http.Get(api + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)

	require.NoError(t, os.Remove(filepath.Join(c.root, "filler")))
	require.Eventually(t, func() bool { return enqueue().StatusCode == http.StatusCreated }, 30*time.Second, 100*time.Millisecond,
		"enqueues work again once the disk has room")
}
