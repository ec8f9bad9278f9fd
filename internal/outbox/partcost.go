package outbox

import "fmt"

// What an idle partition costs (design.md §3.12): every drainer sweep and
// every reaper run visits each live partition, whether it holds anything
// or not. TestIdlePartitionCost measures these on the embedded DynamoDB.
const (
	// IdleSweepCalls, IdleSweepWRU and IdleSweepRRU are one sweep's visit
	// of an idle partition: the claim fence taken and released (two
	// UpdateItem calls, one write unit each) and one due-index Query.
	IdleSweepCalls = 3
	IdleSweepWRU   = 2.0
	IdleSweepRRU   = 0.5
	// IdleReapCalls and IdleReapRRU are one reaper run's visit: the due
	// index Query and the claim fence's consistent GetItem.
	IdleReapCalls = 2
	IdleReapRRU   = 1.0
)

// IdleDailyUnits is what n live partitions cost a day when idle, with a
// drainer sweep and a reaper run every minute (the stack's schedules):
// write and read units.
func IdleDailyUnits(n int) (wru, rru float64) {
	const perDay = 24 * 60
	return float64(n) * perDay * IdleSweepWRU, float64(n) * perDay * (IdleSweepRRU + IdleReapRRU)
}

// PartitionCountCost says, for an operator about to change the count from
// now to n, what the partitions cost idle and how a lowering is undone.
func PartitionCountCost(now, n int) string {
	w, r := IdleDailyUnits(n)
	w0, r0 := IdleDailyUnits(now)
	return fmt.Sprintf("Every drainer sweep (each minute on AWS; ferry dev: every poll) and every reaper run visit each live partition, "+
		"%d DynamoDB calls each when idle: %d partitions cost about %s write and %s read units a day idle (%d now: %s and %s). "+
		"Lanes with live actions keep their partition until they drain; after a lowering the reaper retires the emptied partitions above the count, up to %d a run.",
		IdleSweepCalls+IdleReapCalls, n, units(w), units(r), now, units(w0), units(r0), MaxRetirePerRun)
}

// units prints a unit count in thousands or millions.
func units(u float64) string {
	if u >= 1e6 {
		return fmt.Sprintf("%.1f M", u/1e6)
	}
	return fmt.Sprintf("%.0f k", u/1e3)
}

// MaxRetirePerRun is how many emptied partitions above the count one
// reaper run retires at most (each: a due-index Query, the fence's
// GetItem, a consistent Query of its actions; then one map update).
const MaxRetirePerRun = 256
