// Package telemetry is how Ferry's functions and local stack report what they
// do: CloudWatch metrics in the Embedded Metric Format (EMF) and structured
// JSON logs, both written as JSON lines to one writer (stdout in Lambda, where
// CloudWatch Logs turns EMF lines into metrics without any API call).
//
// Metrics, namespace "Ferry" (the CDK stack's alarms and dashboard use these
// exact names and dimension sets):
//
//	Attempts            Count    [Kind]
//	ActionsEnded        Count    [Kind, Outcome, StopReason]
//	ClaimedActions      Count    []
//	ClaimConflicts      Count    []
//	ShortBatches        Count    []
//	FenceRefusals       Count    [Kind]
//	BacklogDepth        Count    [Partition] and [] (total): claimable now
//	BlockedDepth        Count    [Partition] and [] (total): due, behind a live lane member
//	ClaimedDepth        Count    [Partition] and [] (total)
//	StuckLaneHeads      Count    [Partition] and [] (total): lanes due past StuckAfter
//	OldestDueAge        Seconds  [Partition] and [] (oldest of all): of the claimable
//	OldestBlockedAge    Seconds  [Partition] and [] (oldest of all): of the blocked
//	ReapedActions       Count    [StopReason]
//	RetainedDeletes     Count    [Reason]  (Reason: TTL_LAG, ROW_CAP)
//
// Counters are summed in memory and written by Flush (once per invocation,
// and on SIGTERM); gauges are written when recorded.
//
// Logs name an action only by action.id and action.kind (plus its state,
// attempt and partition): never its payload, lane key, idempotency key or
// subject, which may carry personal data.
package telemetry
