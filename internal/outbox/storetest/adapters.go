package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Script is the payload of the suite's kinds: what each attempt answers.
// Do[i] is the answer of attempt i+1 (the last one repeats): "done",
// "retry", "defer" (no wait: Retry-After 0), "defer:<duration>" (the
// provider's wait), "reread", "uncertain", "failed", "cancelled", "panic",
// "error", or "crash" (the drainer's goroutine dies after the fence).
// ReadBack is what a read-back answers: "done", "none", "absent", "reread",
// "error". Prepare is what Prepare answers ("" = carry on, or an outcome
// name, or "hook": call the recorder's PrepareHook).
type Script struct {
	Do       []string `json:"do"`
	ReadBack string   `json:"rb,omitempty"`
	Prepare  string   `json:"prep,omitempty"`
	Tag      string   `json:"t,omitempty"`
	N        int      `json:"n,omitempty"`
}

// Payload encodes a script.
func Payload(s Script) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// Recorder counts what the suite's adapters were asked to do.
type Recorder struct {
	mu        sync.Mutex
	execs     map[string]int
	readbacks map[string]int
	order     []string // "exec:<id>" and "rb:<id>" in call order
	// OnExecute, when set, runs at the start of every Execute.
	OnExecute func(att *outbox.Attempt)
	// OnExecuteDone, when set, runs when Execute returns (or panics).
	OnExecuteDone func(att *outbox.Attempt)
	// PrepareHook runs when a script's Prepare is "hook".
	PrepareHook func(att *outbox.Attempt)
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{execs: map[string]int{}, readbacks: map[string]int{}}
}

// Execs is how often Execute ran for an action.
func (r *Recorder) Execs(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.execs[id]
}

// ReadBacks is how often ReadBack ran for an action.
func (r *Recorder) ReadBacks(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.readbacks[id]
}

// Order is the sequence of calls.
func (r *Recorder) Order() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.order...)
}

// scriptAdapter is a kind whose behaviour comes from its payload.
type scriptAdapter struct {
	spec   outbox.KindSpec
	rec    *Recorder
	hooked bool // adds an ended-hook item
	table  string
}

func (a *scriptAdapter) Spec() outbox.KindSpec { return a.spec }

func (a *scriptAdapter) Validate(_ string, payload json.RawMessage) error {
	var s Script
	if err := json.Unmarshal(payload, &s); err != nil {
		return &outbox.PayloadError{Message: "not a script"}
	}
	return nil
}

func answer(word string) outbox.Result {
	if w, ok := strings.CutPrefix(word, "defer:"); ok {
		// A provider's own wait, e.g. "defer:5m" (Retry-After: 300).
		d, err := time.ParseDuration(w)
		if err != nil {
			panic(fmt.Sprintf("storetest: bad wait in script word %q", word))
		}
		return outbox.Defer(d, errors.New("rate limited"))
	}
	switch word {
	case "done", "":
		return outbox.Done("ref-1")
	case "retry":
		return outbox.Retry(errors.New("try later"))
	case "defer":
		return outbox.Defer(0, errors.New("rate limited"))
	case "reread":
		return outbox.Reread(0, errors.New("unknown"))
	case "uncertain":
		return outbox.Uncertain(errors.New("maybe"))
	case "failed":
		return outbox.Failed(outbox.StopRejected, errors.New("no"))
	case "cancelled":
		return outbox.Cancelled("", nil)
	case "error":
		return outbox.Result{Err: errors.New("adapter error")}
	}
	panic(fmt.Sprintf("storetest: unknown script word %q", word))
}

func (a *scriptAdapter) Execute(_ context.Context, att *outbox.Attempt) outbox.Result {
	var s Script
	_ = json.Unmarshal(att.Action.Payload, &s)
	a.rec.mu.Lock()
	a.rec.execs[att.Action.ID]++
	a.rec.order = append(a.rec.order, "exec:"+att.Action.ID)
	hook, after := a.rec.OnExecute, a.rec.OnExecuteDone
	a.rec.mu.Unlock()
	if after != nil {
		defer after(att)
	}
	if hook != nil {
		hook(att)
	}
	word := "done"
	if len(s.Do) > 0 {
		word = s.Do[min(att.Number, len(s.Do))-1]
	}
	switch word {
	case "panic":
		panic("scripted panic")
	case "crash":
		runtime.Goexit()
	}
	return answer(word)
}

func (a *scriptAdapter) Prepare(_ context.Context, att *outbox.Attempt) outbox.Result {
	var s Script
	_ = json.Unmarshal(att.Action.Payload, &s)
	switch s.Prepare {
	case "":
		return outbox.Result{}
	case "hook":
		if a.rec.PrepareHook != nil {
			a.rec.PrepareHook(att)
		}
		return outbox.Result{}
	case "panic":
		panic("scripted prepare panic")
	}
	return answer(s.Prepare)
}

// readBackAdapter adds ReadBack to a script adapter.
type readBackAdapter struct{ *scriptAdapter }

func (a readBackAdapter) ReadBack(_ context.Context, att *outbox.Attempt) outbox.Result {
	var s Script
	_ = json.Unmarshal(att.Action.Payload, &s)
	a.rec.mu.Lock()
	a.rec.readbacks[att.Action.ID]++
	a.rec.order = append(a.rec.order, "rb:"+att.Action.ID)
	a.rec.mu.Unlock()
	switch s.ReadBack {
	case "done":
		return outbox.Done("found")
	case "none", "":
		return outbox.Result{}
	case "absent":
		return outbox.Cancelled(outbox.StopAbsent, nil)
	case "reread":
		return outbox.Reread(0, nil)
	case "error":
		return outbox.Result{Err: errors.New("read-back failed")}
	}
	return outbox.Result{}
}

// hookAdapter adds an EndedHook that writes a marker row per ended action.
type hookAdapter struct{ *scriptAdapter }

func (a hookAdapter) Ended(_ context.Context, ended outbox.EndedAction) ([]types.TransactWriteItem, error) {
	return []types.TransactWriteItem{{Put: &types.Put{
		TableName: &a.table,
		Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "HOOK#" + ended.Action.ID},
			"sk": &types.AttributeValueMemberS{Value: string(ended.State)},
		},
	}}}, nil
}

// The suite's kinds.
const (
	KindIdem   = "t-idem"   // idempotent receiver
	KindAMO    = "t-amo"    // at-most-once
	KindRB     = "t-rb"     // read-back
	KindHook   = "t-hook"   // idempotent receiver with an ended hook
	KindTagged = "t-tagged" // tagged variants "a" (and "b" in the newer build)
	KindNew    = "t-new"    // known only to the newer build
	KindLong   = "t-long"   // keeps ended actions 72h (longer than the suite's retention)
	KindPlain  = "t-plain"  // idempotent receiver with Execute only (no Prepare, no hooks)
	KindMail   = "t-mail"   // at-most-once whose provider reports delivery evidence
)

// Registry returns the suite's registry; newer adds KindNew and variant
// "b" of KindTagged, as a build rolled out after this one.
func Registry(rec *Recorder, table string, newer bool) *outbox.Registry {
	reg := outbox.NewRegistry()
	mk := func(name string, class outbox.DeliveryClass) *scriptAdapter {
		return &scriptAdapter{spec: outbox.KindSpec{Name: name, Class: class}, rec: rec, table: table}
	}
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(reg.Register(mk(KindIdem, outbox.IdempotentReceiver)))
	must(reg.Register(mk(KindAMO, outbox.AtMostOnce)))
	must(reg.Register(readBackAdapter{mk(KindRB, outbox.ReadBack)}))
	must(reg.Register(hookAdapter{mk(KindHook, outbox.IdempotentReceiver)}))
	must(reg.Register(plainAdapter{mk(KindPlain, outbox.IdempotentReceiver)}))
	long := mk(KindLong, outbox.IdempotentReceiver)
	long.spec.Retention = 72 * time.Hour
	must(reg.Register(long))
	mail := mk(KindMail, outbox.AtMostOnce)
	mail.spec.DeliveryEvidence = true
	must(reg.Register(mail))
	tagged := mk(KindTagged, outbox.IdempotentReceiver)
	tagged.spec.VariantMode, tagged.spec.TagProperty, tagged.spec.Variants = outbox.TaggedShape, "t", []string{"a"}
	if newer {
		tagged.spec.Variants = []string{"a", "b"}
		must(reg.Register(mk(KindNew, outbox.IdempotentReceiver)))
	}
	must(reg.Register(tagged))
	return reg
}

func hookKey(table, id string) *dynamodb.GetItemInput {
	return &dynamodb.GetItemInput{TableName: &table, Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "HOOK#" + id},
		"sk": &types.AttributeValueMemberS{Value: string(outbox.StateDONE)},
	}, ConsistentRead: aws.Bool(true)}
}

func transact(ctx context.Context, db outbox.DynamoDB, items []types.TransactWriteItem) error {
	_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return err
}

// plainAdapter hides everything of a script adapter but Execute.
type plainAdapter struct{ s *scriptAdapter }

func (a plainAdapter) Spec() outbox.KindSpec { return a.s.Spec() }
func (a plainAdapter) Validate(v string, p json.RawMessage) error {
	return a.s.Validate(v, p)
}
func (a plainAdapter) Execute(ctx context.Context, att *outbox.Attempt) outbox.Result {
	return a.s.Execute(ctx, att)
}
