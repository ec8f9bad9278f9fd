package devstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/ferryhq/ferry/internal/httpapi"
	"github.com/ferryhq/ferry/internal/operator"
)

// dynamoWatch follows whether DynamoDB can be used: every HealthEvery it
// reads the table (Engine.Ping) and, when that changes, prints a status
// line. When DynamoDB answers again without the table (a `ferry dynamodb`
// restarted in memory), it creates the table again and says so, so the
// stack recovers without a restart.
type dynamoWatch struct {
	mu      sync.Mutex
	down    bool
	checks  uint64
	changed chan struct{} // closed and replaced after every check
}

func newDynamoWatch() *dynamoWatch { return &dynamoWatch{changed: make(chan struct{})} }

// watchDynamoDB runs the checks until ctx is done.
func (s *Stack) watchDynamoDB(ctx context.Context) {
	t := time.NewTicker(s.cfg.HealthEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.checkDynamoDB(ctx)
		}
	}
}

// ping says whether DynamoDB can be used: the table can be read and, for
// the embedded DynamoDB, its data directory takes writes (a full disk makes
// it refuse them while reads still work: issue 28).
func (s *Stack) ping(ctx context.Context) error {
	if err := s.engine.Ping(ctx); err != nil {
		return err
	}
	if s.local != nil {
		if err := s.local.Health(); err != nil {
			return &smithy.GenericAPIError{Code: "ServiceUnavailable", Message: err.Error(), Fault: smithy.FaultServer}
		}
	}
	return nil
}

// checkDynamoDB runs one check, re-creating a missing table.
func (s *Stack) checkDynamoDB(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, httpapi.DefaultHealthTimeout)
	defer cancel()
	err := s.ping(cctx)
	var missing *types.ResourceNotFoundException
	recreated := false
	if errors.As(err, &missing) {
		if err = EnsureTable(cctx, s.engine); err == nil {
			recreated = true
		}
	}
	if ctx.Err() != nil {
		return // stopping: not DynamoDB's fault
	}
	w := s.watch
	w.mu.Lock()
	wasDown := w.down
	w.down = err != nil
	w.checks++
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()

	where := s.dynamoDBName()
	switch {
	case err != nil && !wasDown:
		s.status("DynamoDB unreachable (%s): %s; /healthz answers 503 until it is back", where, operator.DescribeDynamoDBError(err))
		s.log.Error("DynamoDB unreachable", slog.String("dynamodb", where), slog.Any("error", err))
	case recreated:
		s.status("DynamoDB (%s) had no table %q: created it again, empty", where, s.cfg.Table)
		s.log.Warn("table created again", slog.String("dynamodb", where), slog.String("table", s.cfg.Table))
	case err == nil && wasDown:
		s.status("DynamoDB reachable again (%s)", where)
		s.log.Info("DynamoDB reachable again", slog.String("dynamodb", where))
	}
}

// status prints one status line, time-stamped, where the banner went.
func (s *Stack) status(format string, args ...any) {
	fmt.Fprintf(s.cfg.Stdout, "%s  %s\n", s.cfg.Clock.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (s *Stack) dynamoDBName() string {
	if s.cfg.DynamoDBEndpoint == "" {
		return "embedded"
	}
	return s.cfg.DynamoDBEndpoint
}

// HealthChecks counts the DynamoDB checks done so far.
func (s *Stack) HealthChecks() uint64 {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return s.watch.checks
}

// WaitHealthChecks blocks until more than n DynamoDB checks were done (or
// ctx is done) and returns the count: tests step the watch check by check
// instead of sleeping.
func (s *Stack) WaitHealthChecks(ctx context.Context, n uint64) uint64 {
	for {
		s.watch.mu.Lock()
		checks, ch := s.watch.checks, s.watch.changed
		s.watch.mu.Unlock()
		if checks > n {
			return checks
		}
		select {
		case <-ctx.Done():
			return checks
		case <-ch:
		}
	}
}
