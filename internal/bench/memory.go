package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/ddblocal/ddbhttp"
	"github.com/ferryhq/ferry/internal/devstack"
	"github.com/ferryhq/ferry/internal/outbox"
)

// Memory is the drainer's peak memory at one batch size.
type Memory struct {
	BatchSize int
	Actions   int
	PeakRSSKB int64 // VmHWM: what Lambda reports as Max Memory Used
	HeapSysKB int64
}

// ChildFlag makes cmd/ferry-bench run as the drainer child of MemoryRun.
const ChildFlag = "-drainer-child"

// MemoryRun serves an embedded DynamoDB on loopback, fills one partition
// with n actions, and runs a drainer in a child process (exe ChildFlag
// endpoint batch) through the AWS SDK, as the drainer function does; the
// child reports its peak resident memory.
func MemoryRun(ctx context.Context, exe string, n, batch, payloadBytes int) (Memory, error) {
	db := ddblocal.New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Memory{}, err
	}
	srv := &http.Server{Handler: ddbhttp.NewHandler(db)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	prov := newProvider(clock.System{})
	reg, err := registry(prov)
	if err != nil {
		return Memory{}, err
	}
	eng, err := outbox.New(db, clock.System{}, reg, outbox.Config{Table: table, Partitions: 1})
	if err != nil {
		return Memory{}, err
	}
	if err := eng.EnsureTable(ctx); err != nil {
		return Memory{}, err
	}
	pl := payload(payloadBytes)
	for i := 0; i < n; i += outbox.MaxBatchEnqueue {
		ps := make([]outbox.EnqueueParams, 0, outbox.MaxBatchEnqueue)
		for j := i; j < min(n, i+outbox.MaxBatchEnqueue); j++ {
			ps = append(ps, outbox.EnqueueParams{Kind: KindWebhook, WorkspaceID: "ws-00001", Payload: pl})
		}
		if _, err := eng.EnqueueBatch(ctx, ps); err != nil {
			return Memory{}, err
		}
	}
	cmd := exec.CommandContext(ctx, exe, ChildFlag, "http://"+ln.Addr().String(), strconv.Itoa(batch))
	cmd.Env = append(os.Environ(), "AWS_EC2_METADATA_DISABLED=true")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Memory{}, fmt.Errorf("drainer child: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var m Memory
	if err := json.Unmarshal(out, &m); err != nil {
		return Memory{}, fmt.Errorf("drainer child answered %q: %w", out, err)
	}
	if m.Actions != n {
		return m, fmt.Errorf("drainer child delivered %d of %d", m.Actions, n)
	}
	return m, nil
}

// DrainerChild is the child's side of MemoryRun: drain partition 0 of the
// table at endpoint with the given batch size and print a Memory as JSON.
func DrainerChild(ctx context.Context, endpoint string, batch int) error {
	prov := newProvider(clock.System{})
	reg, err := registry(prov)
	if err != nil {
		return err
	}
	eng, err := outbox.New(devstack.RemoteDynamoDB(endpoint), clock.System{}, reg, outbox.Config{Table: table, Partitions: 1, BatchSize: batch})
	if err != nil {
		return err
	}
	for round := 0; round < 1000; round++ {
		r, err := eng.DrainPartition(ctx, 0, outbox.DrainParams{Owner: "drainer", BatchSize: batch})
		if err != nil {
			return err
		}
		if r.Claimed == 0 {
			break
		}
	}
	m := Memory{BatchSize: batch, Actions: prov.delivered(), PeakRSSKB: procStatusKB("VmHWM")}
	m.HeapSysKB = heapSysKB()
	return json.NewEncoder(os.Stdout).Encode(m)
}

func procStatusKB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if ok && name == field {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}
