package outbox

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal/expr"
)

// Every writer of a written-first action builds it from the record: the
// item must be the one the first enqueue would have written.
func TestIdemRecordRebuildsTheAction(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 123e6, time.UTC)
	base := Action{
		ID: NewActionID(t0, 0xabcdef0123, 3, 77), Kind: "webhook", WorkspaceID: "ws-1", IdempotencyKey: "order#42",
		State: StateADMITTED, MaxAttempts: 8, Payload: []byte(`{"url":"https://x","n":1}`),
		Partition: 3, Seq: 77, CreatedAt: t0, NextAttemptAt: t0,
	}
	variants := map[string]func(a *Action){
		"plain":          func(*Action) {},
		"subject":        func(a *Action) { a.SubjectID = "alice#1" },
		"variant":        func(a *Action) { a.Variant = "v2" },
		"proposed":       func(a *Action) { a.State = StatePROPOSED },
		"expires":        func(a *Action) { a.ExpiresAt = t0.Add(time.Hour) },
		"proposed+exp":   func(a *Action) { a.State, a.ExpiresAt = StatePROPOSED, t0.Add(time.Hour) },
		"instance-level": func(a *Action) { a.WorkspaceID = "" },
	}
	for name, mod := range variants {
		t.Run(name, func(t *testing.T) {
			a := base
			mod(&a)
			rec := idemRecord(&a)
			got, ok := pendingFromRecord(rec)
			require.True(t, ok)
			require.Equal(t, actionItem(&a), actionItem(&got))
			// Ended: the record no longer describes an action.
			rec[attrTTL] = avN(1)
			_, ok = pendingFromRecord(rec)
			require.False(t, ok)
		})
	}
}

// The record of the benchmark's keyed 1 KB action costs one write unit:
// it copies the payload but nothing the key or id already say.
func TestIdemRecordOfA1KBActionFitsOneUnit(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	a := Action{
		ID: NewActionID(t0, 0xabcdef0123, 15, 123456), Kind: "webhook", WorkspaceID: "ws-00001", IdempotencyKey: "order-00001999",
		State: StateADMITTED, MaxAttempts: 8, Partition: 15, Seq: 123456, CreatedAt: t0, NextAttemptAt: t0,
	}
	// The payload that makes the keyless action's item, executing with its
	// fence set, 1,024 bytes (internal/bench PayloadFor): its base item.
	a.Payload = []byte(`{}`)
	it := actionItem(&a)
	it[attrLease], it[attrWrite], it[attrOwner] = avMs(t0), avMs(t0), avS("d-0123456789abcdef")
	delete(it, attrIKey)
	pad := 1024 - expr.ItemSize(map[string]types.AttributeValue(it)) - 32
	a.Payload = []byte(`{"p":"` + strings.Repeat("x", pad-8) + `"}`)
	size := expr.ItemSize(map[string]types.AttributeValue(idemRecord(&a)))
	require.LessOrEqual(t, size, 1024, "record of %d bytes", size)
	t.Logf("record %d bytes for a payload of %d bytes", size, len(a.Payload))
}
