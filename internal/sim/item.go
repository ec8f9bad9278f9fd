package sim

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/outbox"
)

func str(it map[string]types.AttributeValue, k string) string {
	if v, ok := it[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func num(it map[string]types.AttributeValue, k string) int64 {
	if v, ok := it[k].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func has(it map[string]types.AttributeValue, k string) bool {
	_, ok := it[k]
	return ok
}

func msTime(it map[string]types.AttributeValue, k string) time.Time {
	return time.UnixMilli(num(it, k)).UTC()
}

func state(it map[string]types.AttributeValue) outbox.State { return outbox.State(str(it, "st")) }

func payloadToken(it map[string]types.AttributeValue) string {
	var p struct {
		T string `json:"t"`
	}
	_ = json.Unmarshal([]byte(str(it, "pl")), &p)
	return p.T
}

// rowState is a one-line description of an action row.
func rowState(it map[string]types.AttributeValue) string {
	s := fmt.Sprintf("%s ep=%d att=%d/%d", str(it, "st"), num(it, "ep"), num(it, "att"), num(it, "max"))
	if pv := num(it, "prev"); pv != 0 {
		s += fmt.Sprintf(" prev=%d", pv)
	}
	if o := str(it, "own"); o != "" {
		s += " own=" + o
	}
	if has(it, "lx") {
		s += " lease=" + fmtDur(msTime(it, "lx").Sub(epoch0))
	}
	if has(it, "wsa") {
		s += " fence=" + fmtDur(msTime(it, "wsa").Sub(epoch0))
	}
	if has(it, "nat") && str(it, "st") == string(outbox.StateADMITTED) {
		s += " next=" + fmtDur(msTime(it, "nat").Sub(epoch0))
	}
	if d := str(it, "due_sk"); d != "" {
		s += " due_sk=" + d
	} else if st := str(it, "st"); st == "ADMITTED" {
		s += " NOT-IN-DUE-INDEX"
	} else if st == "EXECUTING" {
		s += " in-flight" // out of due, in the fence's map (design.md §3.3)
	}
	if sr := str(it, "sr"); sr != "" {
		s += " stop=" + sr
	}
	if has(it, "pl") {
		s += " payload"
	}
	if has(it, "ttl") {
		s += " ttl"
	}
	return s
}

// keyID labels an action by its key, as the simulator's rows are kept
// (the ids the engine mints are of no concern to its checks).
func keyID(a *outbox.Action) string { return rowKey(a.Partition, a.Seq) }

// rowKey labels the action row of (partition, seq): "<partition>-<seq>".
func rowKey(partition int, seq int64) string {
	return strconv.Itoa(partition) + "-" + strconv.FormatInt(seq, 10)
}

// parseRowKey is rowKey's inverse.
func parseRowKey(k string) (partition int, seq int64) {
	ps, ss, _ := strings.Cut(k, "-")
	partition, _ = strconv.Atoi(ps)
	seq, _ = strconv.ParseInt(ss, 10, 64)
	return partition, seq
}
