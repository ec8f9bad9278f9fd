package lambdastack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Emulator runs one function's bootstrap under the Lambda Runtime Interface
// Emulator. The emulator serves one invocation at a time, so each
// concurrent instance is its own emulator process: an invocation takes an
// idle instance (the most recently used, as Lambda keeps warm ones warm)
// or starts a new one, up to MaxInstances, and waits for one past that.
type Emulator struct {
	Function *Function
	// RIE is the aws-lambda-rie binary; Bootstrap the function's binary.
	RIE, Bootstrap string
	// Env is the function's whole environment (the emulator passes its
	// own environment to the function): the template's variables, what
	// Lambda sets, and the local endpoints.
	Env          map[string]string
	MaxInstances int
	// Logs receives every line an instance writes.
	Logs *Logs

	mu        sync.Mutex
	idle      []*instance
	seq       int // instance numbers given
	count     int // instances started, alive or not
	live      map[*instance]bool
	freed     chan struct{}
	closed    bool
	coldStart []time.Duration // the first invocation of each instance
	invokes   int
}

type instance struct {
	n      int
	label  string // "drainer#2", its prefix in the logs
	stream string // its log stream name, also AWS_LAMBDA_LOG_STREAM_NAME
	addr   string
	cmd    *exec.Cmd
	done   chan struct{}
	warm   bool
}

// Result is one invocation's outcome.
type Result struct {
	// Payload is what the function returned (or its error document).
	Payload []byte
	// FunctionError is set when the function failed: it returned an error,
	// panicked, exited or timed out (what Lambda marks with
	// X-Amz-Function-Error); the instance is discarded after a timeout or
	// an exit, as Lambda resets the execution environment.
	FunctionError string
	Duration      time.Duration
	Cold          bool
	Instance      string
}

// ErrClosed is returned by an invocation after Close.
var ErrClosed = errors.New("lambdastack: the function's emulator is stopped")

// Invoke runs one invocation of the function with payload, as Lambda's
// synchronous Invoke does.
func (e *Emulator) Invoke(ctx context.Context, payload []byte) (Result, error) {
	in, err := e.take(ctx)
	if err != nil {
		return Result{}, err
	}
	began := time.Now()
	res, err := in.invoke(ctx, payload, e.Function.Timeout)
	res.Duration = time.Since(began)
	res.Cold = !in.warm
	res.Instance = in.stream
	discard := err != nil || strings.HasPrefix(res.FunctionError, "Runtime.")
	e.mu.Lock()
	e.invokes++
	if res.Cold {
		e.coldStart = append(e.coldStart, res.Duration)
	}
	in.warm = true
	e.mu.Unlock()
	if discard {
		e.retire(in)
	} else {
		e.give(in)
	}
	return res, err
}

// take returns an idle instance, starting one if none is idle and the cap
// allows, or waits for one.
func (e *Emulator) take(ctx context.Context) (*instance, error) {
	for {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return nil, ErrClosed
		}
		if e.live == nil {
			e.live = map[*instance]bool{}
			e.freed = make(chan struct{})
		}
		if n := len(e.idle); n > 0 {
			in := e.idle[n-1]
			e.idle = e.idle[:n-1]
			e.mu.Unlock()
			return in, nil
		}
		if len(e.live) < max(e.MaxInstances, 1) {
			e.seq++
			in := &instance{n: e.seq}
			e.live[in] = true
			e.mu.Unlock()
			if err := e.start(ctx, in); err != nil {
				e.mu.Lock()
				delete(e.live, in)
				e.mu.Unlock()
				return nil, err
			}
			e.mu.Lock()
			e.count++
			e.mu.Unlock()
			return in, nil
		}
		freed := e.freed
		e.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (e *Emulator) give(in *instance) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		go stopInstance(in)
		return
	}
	e.idle = append(e.idle, in)
	close(e.freed)
	e.freed = make(chan struct{})
}

func (e *Emulator) retire(in *instance) {
	e.mu.Lock()
	delete(e.live, in)
	if e.freed != nil {
		close(e.freed)
		e.freed = make(chan struct{})
	}
	e.mu.Unlock()
	stopInstance(in)
	e.Logs.Event(e.Function.Name, in.label, "instance discarded (the function failed as Lambda resets an environment after)")
}

// start launches one emulator process and waits until it listens.
func (e *Emulator) start(ctx context.Context, in *instance) error {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return err
	}
	apiAddr, err := freeLoopbackAddr()
	if err != nil {
		return err
	}
	in.addr = addr
	in.label = fmt.Sprintf("%s#%d", e.Function.Name, in.n)
	in.stream = fmt.Sprintf("%s/[$LATEST]%s-%d", time.Now().UTC().Format("2006/01/02"), e.Function.Name, in.n)
	env := make([]string, 0, len(e.Env)+4)
	for k, v := range e.Env {
		env = append(env, k+"="+v)
	}
	env = append(env, "AWS_LAMBDA_LOG_STREAM_NAME="+in.stream)
	cmd := exec.Command(e.RIE,
		"--runtime-interface-emulator-address", addr,
		"--runtime-api-address", apiAddr,
		"--log-level", "warn",
		e.Bootstrap)
	cmd.Dir = filepath.Dir(e.Bootstrap)
	cmd.Env = env
	w := e.Logs.Writer(e.Function.Name, in.label)
	cmd.Stdout, cmd.Stderr = w, w
	// Its own process group: Ctrl-C in a terminal reaches ferry local,
	// which stops the instances itself, in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the emulator for %s: %w", e.Function.Name, err)
	}
	in.cmd = cmd
	in.done = make(chan struct{})
	go func() { _ = cmd.Wait(); _ = w.Close(); close(in.done) }()
	if err := waitListening(ctx, addr, in.done); err != nil {
		stopInstance(in)
		return fmt.Errorf("the emulator for %s: %w", e.Function.Name, err)
	}
	return nil
}

var invokeClient = &http.Client{}

// invoke posts one invocation to the instance's emulator.
func (in *instance) invoke(ctx context.Context, payload []byte, timeout time.Duration) (Result, error) {
	// The emulator enforces the function's timeout itself; this bound only
	// keeps a wedged emulator from holding the caller forever.
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+in.addr+"/2015-03-31/functions/function/invocations", bytes.NewReader(payload))
	if err != nil {
		return Result{}, err
	}
	resp, err := invokeClient.Do(req)
	if err != nil {
		return Result{}, fmt.Errorf("invoking %s: %w", in.stream, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return Result{}, fmt.Errorf("invoking %s: %w", in.stream, err)
	}
	res := Result{Payload: body}
	switch {
	case bytes.HasPrefix(body, []byte("Task timed out after")):
		res.FunctionError = "Runtime.Timeout"
	case resp.StatusCode != http.StatusOK:
		res.FunctionError = "Runtime.ExitError"
		if t := errorType(body); t != "" {
			res.FunctionError = t
		}
	default:
		res.FunctionError = errorType(body)
	}
	return res, nil
}

// errorType is the errorType of a function error document
// ({"errorMessage": …, "errorType": …}), or "".
func errorType(body []byte) string {
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	if _, ok := doc["errorMessage"]; !ok {
		return ""
	}
	for k := range doc {
		if k != "errorMessage" && k != "errorType" && k != "stackTrace" {
			return ""
		}
	}
	var t string
	_ = json.Unmarshal(doc["errorType"], &t)
	if t == "" {
		t = "Unhandled"
	}
	return t
}

// Close stops every instance: SIGTERM, then SIGKILL after 5 s.
func (e *Emulator) Close() {
	e.mu.Lock()
	e.closed = true
	var all []*instance
	for in := range e.live {
		all = append(all, in)
	}
	e.idle = nil
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, in := range all {
		wg.Add(1)
		go func() { defer wg.Done(); stopInstance(in) }()
	}
	wg.Wait()
}

// Stats are an emulator's counts for the summary at exit.
type EmulatorStats struct {
	Instances   int
	Invocations int
	ColdStarts  []time.Duration
}

// Stats returns the emulator's counts so far.
func (e *Emulator) Stats() EmulatorStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return EmulatorStats{Instances: e.count, Invocations: e.invokes, ColdStarts: append([]time.Duration(nil), e.coldStart...)}
}

// PIDs returns the process ids of the live emulator processes.
func (e *Emulator) PIDs() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []int
	for in := range e.live {
		if in.cmd != nil && in.cmd.Process != nil {
			out = append(out, in.cmd.Process.Pid)
		}
	}
	return out
}

func stopInstance(in *instance) {
	if in.cmd == nil || in.cmd.Process == nil {
		return
	}
	// The emulator's process group holds the bootstrap too.
	_ = syscall.Kill(-in.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-in.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-in.cmd.Process.Pid, syscall.SIGKILL)
		<-in.done
	}
}

// freeLoopbackAddr returns a loopback address with a port free right now.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// waitListening dials addr until it answers, the process exits or 10 s
// pass.
func waitListening(ctx context.Context, addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			return c.Close()
		}
		select {
		case <-exited:
			return errors.New("exited before listening")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return fmt.Errorf("nothing listens on %s after 10 s", addr)
}

// LambdaEnvironment is what Lambda itself sets in a function's
// environment besides the function's own variables (credentials come
// separately: they name the role).
func LambdaEnvironment(f *Function, local Local, taskRoot string) map[string]string {
	return map[string]string{
		"PATH":                            os.Getenv("PATH"),
		"TZ":                              ":UTC",
		"LANG":                            "en_US.UTF-8",
		"LAMBDA_TASK_ROOT":                taskRoot,
		"_HANDLER":                        f.Handler,
		"AWS_REGION":                      local.Region,
		"AWS_DEFAULT_REGION":              local.Region,
		"AWS_LAMBDA_FUNCTION_NAME":        f.Name,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(f.MemoryMB),
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     strconv.Itoa(int(f.Timeout / time.Second)),
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + f.Name,
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		// No EC2 metadata service here: never look for one.
		"AWS_EC2_METADATA_DISABLED": "true",
	}
}
