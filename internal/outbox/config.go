package outbox

import (
	"fmt"
	"time"
)

// Config is the engine's configuration. Build it, call WithDefaults, then
// Validate (New does both).
type Config struct {
	Table       string        // the table's name; required
	Partitions  int           // shards of the outbox; default 16
	Lease       time.Duration // how long a claim owns an action; default 5m
	WriteMargin time.Duration // lease that must be left at the write fence; default 60s; < Lease
	RetryBase   time.Duration // first retry backoff; default 1s
	RetryCap    time.Duration // longest retry backoff; default 15m
	BatchSize   int           // actions claimed per transaction; default 25, max 100 incl. checks
	MaxAttempts int           // default attempts of an action; default 8
	Retention   time.Duration // how long ended actions are kept; default 30 days
	RowCap      int           // ended actions kept at most; default 500000
	ClockSkew   time.Duration // documented bound on clock disagreement; default 5s (0 with SingleClock)
	// SingleClock says every process of the engine reads one clock
	// (`ferry dev`), or the operator vouches that the clocks agree: a zero
	// ClockSkew then stays zero instead of taking DefaultClockSkew.
	SingleClock bool
	StuckAfter  time.Duration // a lane head due longer than this counts as stuck; default 15m
	MaxPayload  int           // payload bytes; default 200 KiB
	SeqBlock    int           // seq numbers reserved per counter update; default 32
	// MaxDeferrals bounds the deferrals of an action in a row (a Defer
	// outcome after another, with no other answer of the provider
	// between); the next one ends it FAILED with DEFERRALS_EXHAUSTED.
	// Default 50.
	MaxDeferrals int
	// MaxDeferTime bounds how long such a run of deferrals may last, from
	// the first deferral's write; no deferral waits past it. Default 24h
	// (a provider's daily quota). At least RetryBase.
	MaxDeferTime time.Duration
}

// The defaults of Config.
const (
	DefaultPartitions   = 16
	DefaultLease        = 5 * time.Minute
	DefaultWriteMargin  = 60 * time.Second
	DefaultRetryBase    = time.Second
	DefaultRetryCap     = 15 * time.Minute
	DefaultBatchSize    = 25
	DefaultMaxAttempts  = 8
	DefaultRetention    = 30 * 24 * time.Hour
	DefaultRowCap       = 500000
	DefaultClockSkew    = 5 * time.Second
	DefaultStuckAfter   = 15 * time.Minute
	DefaultMaxPayload   = 200 * 1024
	DefaultSeqBlock     = 32
	DefaultMaxDeferrals = 50
	DefaultMaxDeferTime = 24 * time.Hour
	DefaultTable        = "ferry"

	// MaxPartitionCount is the most partitions a table's count may be
	// (Config.Partitions, FERRY_PARTITIONS, ferry dev's --partitions, the
	// stack's Partitions, ferry partitions --set): every sweep of the
	// drainer and every reaper run visits each live partition, about three
	// DynamoDB calls each even when it is idle (design.md §3.12). Ids can
	// name partitions up to MaxPartitions.
	MaxPartitionCount = 1024

	// MaxTransactItems is DynamoDB's limit of items in one transaction.
	MaxTransactItems = 100
	// MaxBatchEnqueue is the most actions one EnqueueBatch takes.
	MaxBatchEnqueue = 25
)

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.WriteMargin == 0 {
		c.WriteMargin = DefaultWriteMargin
	}
	if c.RetryBase == 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.RetryCap == 0 {
		c.RetryCap = DefaultRetryCap
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.RowCap == 0 {
		c.RowCap = DefaultRowCap
	}
	if c.ClockSkew == 0 && !c.SingleClock {
		c.ClockSkew = DefaultClockSkew
	}
	if c.StuckAfter == 0 {
		c.StuckAfter = DefaultStuckAfter
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.SeqBlock == 0 {
		c.SeqBlock = DefaultSeqBlock
	}
	if c.MaxDeferrals == 0 {
		c.MaxDeferrals = DefaultMaxDeferrals
	}
	if c.MaxDeferTime == 0 {
		c.MaxDeferTime = DefaultMaxDeferTime
	}
	return c
}

// Validate reports the first problem of c as a *ValidationError. Its
// messages name Config fields by their Go names (Lease, WriteMargin, ...),
// and for a conflict both fields and what would work, so that a front end
// can put its own flag or variable names in their place
// (ValidationError.Named).
func (c Config) Validate() error {
	for _, check := range []func() error{c.validateShape, c.validateTiming, c.validateLimits} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// fieldRefused is a refused Config field.
func fieldRefused(field, format string, args ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// validateShape checks the table and its partitions.
func (c Config) validateShape() error {
	switch {
	case c.Table == "":
		return fieldRefused("Table", "Table is required (the table's name)")
	case c.Partitions < 1 || c.Partitions > MaxPartitionCount:
		return fieldRefused("Partitions", "Partitions must be between 1 and %d, got %d", MaxPartitionCount, c.Partitions)
	}
	return nil
}

// validateTiming checks the timing rules (design.md §13): the lease, the
// write margin and the clock skew.
func (c Config) validateTiming() error {
	switch {
	case c.Lease < time.Second:
		return fieldRefused("Lease", "Lease must be at least 1s, got %s", c.Lease)
	case c.WriteMargin <= 0:
		return fieldRefused("WriteMargin", "WriteMargin must be positive, got %s", c.WriteMargin)
	case c.WriteMargin >= c.Lease:
		return fieldRefused("WriteMargin", "WriteMargin (%s) must be shorter than Lease (%s): lower WriteMargin below %s or raise Lease above %s",
			c.WriteMargin, c.Lease, c.Lease, c.WriteMargin)
	case c.ClockSkew < 0:
		return fieldRefused("ClockSkew", "ClockSkew must not be negative, got %s", c.ClockSkew)
	case c.ClockSkew >= c.WriteMargin:
		return fieldRefused("ClockSkew", "ClockSkew (%s) must be shorter than WriteMargin (%s): a provider call gets WriteMargin less ClockSkew; lower ClockSkew below %s or raise WriteMargin above %s",
			c.ClockSkew, c.WriteMargin, c.WriteMargin, c.ClockSkew)
	case c.WriteMargin+c.ClockSkew >= c.Lease:
		// A claim that set the write fence (an idempotent receiver) calls
		// only with WriteMargin plus ClockSkew of its lease left.
		return fieldRefused("Lease", "Lease (%s) must be longer than WriteMargin (%s) plus ClockSkew (%s): raise Lease above %s, or lower WriteMargin or ClockSkew",
			c.Lease, c.WriteMargin, c.ClockSkew, c.WriteMargin+c.ClockSkew)
	}
	return nil
}

// validateLimits checks retries, batch, attempts, retention and sizes.
func (c Config) validateLimits() error {
	switch {
	case c.RetryBase <= 0:
		return fieldRefused("RetryBase", "RetryBase must be positive, got %s", c.RetryBase)
	case c.RetryCap < c.RetryBase:
		return fieldRefused("RetryCap", "RetryCap (%s) cannot be shorter than RetryBase (%s)", c.RetryCap, c.RetryBase)
	case c.BatchSize < 1 || c.BatchSize > MaxTransactItems-1:
		return fieldRefused("BatchSize", "BatchSize must be between 1 and %d (one transaction item is the claim fence check), got %d", MaxTransactItems-1, c.BatchSize)
	case c.MaxAttempts < 1:
		return fieldRefused("MaxAttempts", "MaxAttempts must be at least 1, got %d", c.MaxAttempts)
	case c.Retention < time.Hour:
		return fieldRefused("Retention", "Retention must be at least 1h, got %s", c.Retention)
	case c.RowCap < 1:
		return fieldRefused("RowCap", "RowCap must be at least 1, got %d", c.RowCap)
	case c.StuckAfter <= 0:
		return fieldRefused("StuckAfter", "StuckAfter must be positive, got %s", c.StuckAfter)
	case c.MaxPayload < 1 || c.MaxPayload > 350*1024:
		return fieldRefused("MaxPayload", "MaxPayload must be between 1 and %d bytes (the 400 KB item limit leaves room for attributes), got %d", 350*1024, c.MaxPayload)
	case c.SeqBlock < 1 || c.SeqBlock > 10000:
		return fieldRefused("SeqBlock", "SeqBlock must be between 1 and 10000, got %d", c.SeqBlock)
	case c.MaxDeferrals < 1 || c.MaxDeferrals > 10000:
		return fieldRefused("MaxDeferrals", "MaxDeferrals must be between 1 and 10000, got %d", c.MaxDeferrals)
	case c.MaxDeferTime < c.RetryBase:
		return fieldRefused("MaxDeferTime", "MaxDeferTime (%s) cannot be shorter than RetryBase (%s)", c.MaxDeferTime, c.RetryBase)
	}
	return nil
}
