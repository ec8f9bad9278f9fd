package sim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Bad input (issue 27): requests a caller, an operator or a deploy may get
// wrong, each of which must be refused with a clear error and change
// nothing (badInputStep judges the table; a bad configuration or kind is
// judged by what it leaves: no engine, an unchanged registry).

// badCase is one bad request: what it is, and the call.
type badCase struct {
	name string
	do   func(ctx context.Context) error
}

// clearRefusal says whether err is a refusal a caller can act on: the
// engine's validation errors, an unknown id or kind, a refused transition.
func clearRefusal(err error) bool {
	var (
		ve *outbox.ValidationError
		pe *outbox.PayloadError
		te *outbox.TooLargeError
		be *outbox.BatchItemError
	)
	switch {
	case errors.As(err, &be):
		return be.Index >= 0 && errors.Unwrap(be) == be.Err && clearRefusal(be.Err)
	case errors.As(err, &ve):
		// As a front end shows it, with its own names for the fields (and
		// as one with none shows it: the message itself).
		names := map[string]string{ve.Field: "--" + strings.ToLower(ve.Field), "Lease": "--lease", "WriteMargin": "--write-margin"}
		return ve.Field != "" && ve.Named(names) != "" && ve.Named(nil) == ve.Message
	case errors.As(err, &pe), errors.As(err, &te):
		return err.Error() != ""
	}
	return errors.Is(err, outbox.ErrNotFound) || errors.Is(err, outbox.ErrUnknownKind) || errors.As(err, new(*outbox.TransitionError)) ||
		errors.Is(err, outbox.ErrLayout)
}

// badRequest sends one bad request, drawn from the seed.
func (w *world) badRequest(p *proc, h *host) (string, error) {
	cases := w.badCases(p, h)
	c := cases[w.rng.IntN(len(cases))]
	return c.name, c.do(p.ctx())
}

// badCases are the bad requests: enqueues, reads and operator calls.
func (w *world) badCases(p *proc, h *host) []badCase {
	enq := func(name string, ep outbox.EnqueueParams) badCase {
		if ep.Payload == nil {
			ep.Payload = []byte(`{"t":"bad"}`)
		}
		return badCase{name, func(ctx context.Context) error {
			w.called("Enqueue")
			_, err := h.eng.Enqueue(ctx, ep)
			return err
		}}
	}
	big := []byte(`{"t":"` + strings.Repeat("x", w.cfg.MaxPayload) + `"}`)
	// laneFind finds a lane with a cursor of a lane find whose partitions
	// are parts (JSON): a cursor a caller made up.
	laneFind := func(parts string) func(context.Context) error {
		return func(ctx context.Context) error {
			w.called("ActionFind")
			c := base64.RawURLEncoding.EncodeToString([]byte(`{"s":"lane","k":{"pk":"P#0","sk":"A#00000000000000000001"},"p":` + parts + `}`))
			_, err := h.eng.ActionFind(ctx, outbox.ActionFindParams{WorkspaceID: "w1", LaneKey: "a", Cursor: c})
			return err
		}
	}
	// onForeign runs f on an engine pointed at a table that is not this
	// build's to write (a deploy's wrong table name): another table of
	// Ferry's key schema without the marker, one created before v0.1.0
	// (a marker without a layout version), or one of a newer layout. Every
	// build refuses it before any write (design.md §3.10).
	onForeign := func(f func(*outbox.Engine) error) error {
		tbl := w.foreignTable()
		e, err := outbox.New(w.wrap, h.clk, h.reg, outbox.Config{Table: tbl}, outbox.WithSleeper(noSleep), outbox.WithParallel(w.parallel))
		if err != nil {
			return err
		}
		err = f(e)
		if n := w.itemCount(tbl); n != foreignItems[tbl] {
			w.violate("bad-input", nil, "%s: table %s holds %d items after a refused call, not %d", p.name, tbl, n, foreignItems[tbl])
		}
		return err
	}
	cs := []badCase{
		enq("an enqueue of an unknown kind", outbox.EnqueueParams{Kind: "no-such-kind", WorkspaceID: "w1", Payload: []byte(`{}`)}),
		enq("an enqueue of a payload that is not JSON", outbox.EnqueueParams{Kind: kindRB, WorkspaceID: "w1", Payload: []byte(`not json`)}),
		enq("an enqueue without a kind", outbox.EnqueueParams{WorkspaceID: "w1"}),
		enq("an enqueue without a workspace", outbox.EnqueueParams{Kind: kindRB}),
		enq("an enqueue with a 513-byte lane key", outbox.EnqueueParams{Kind: kindRB, WorkspaceID: "w1", LaneKey: strings.Repeat("l", 513)}),
		enq("an enqueue into workspace w#1", outbox.EnqueueParams{Kind: kindRB, WorkspaceID: "w#1"}),
		enq("an enqueue whose subject holds a NUL", outbox.EnqueueParams{Kind: kindRB, WorkspaceID: "w1", SubjectID: "s\x00"}),
		enq("an enqueue without a payload", outbox.EnqueueParams{Kind: kindRB, WorkspaceID: "w1", Payload: []byte{}}),
		enq("an enqueue of a payload over MaxPayload", outbox.EnqueueParams{Kind: kindRB, WorkspaceID: "w1", Payload: big}),
		enq("an enqueue of 1001 attempts", outbox.EnqueueParams{Kind: kindRB, WorkspaceID: "w1", MaxAttempts: 1001}),
		enq("an enqueue that expired already", outbox.EnqueueParams{Kind: kindRB, WorkspaceID: "w1", ExpiresAt: h.now().Add(-time.Second)}),
		enq("an enqueue of a tagged kind whose payload is no object", outbox.EnqueueParams{Kind: kindIdem, WorkspaceID: "w1", Payload: []byte(`[1]`)}),
		enq("an enqueue of a tagged kind without its tag", outbox.EnqueueParams{Kind: kindIdem, WorkspaceID: "w1", Payload: []byte(`{"t":"x"}`)}),
		enq("an enqueue of a variant no build knows", outbox.EnqueueParams{Kind: kindIdem, WorkspaceID: "w1", Payload: []byte(`{"t":"x","v":"v9"}`)}),
		enq("an enqueue of a key-suffix kind without a key", outbox.EnqueueParams{Kind: kindSuffix, WorkspaceID: "w1", Payload: []byte(`{"t":"b"}`)}),
		enq("an enqueue of a key-suffix kind whose key names no variant of it", outbox.EnqueueParams{Kind: kindSuffix, WorkspaceID: "w1", IdempotencyKey: "order-7:v9", Payload: []byte(`{"t":"b"}`)}),
		enq("an enqueue of a payload its adapter refuses", outbox.EnqueueParams{Kind: kindRB, WorkspaceID: "w1", Payload: []byte(`{"t":""}`)}),
		enq("an enqueue of a payload its adapter refuses without a PayloadError", outbox.EnqueueParams{Kind: kindIdem, WorkspaceID: "w1", Payload: []byte(`{"t":"","v":"v1"}`)}),
		{"an empty batch", func(ctx context.Context) error {
			w.called("EnqueueBatch")
			_, err := h.eng.EnqueueBatch(ctx, nil)
			return err
		}},
		{"a batch of 26", func(ctx context.Context) error {
			w.called("EnqueueBatch")
			_, err := h.eng.EnqueueBatch(ctx, slices.Repeat([]outbox.EnqueueParams{{Kind: kindRB, WorkspaceID: "w1", Payload: []byte(`{"t":"b"}`)}}, 26))
			return err
		}},
		{"a batch whose second action has no workspace", func(ctx context.Context) error {
			w.called("EnqueueBatch")
			_, err := h.eng.EnqueueBatch(ctx, []outbox.EnqueueParams{{Kind: kindRB, WorkspaceID: "w1", Payload: []byte(`{"t":"b"}`)}, {Kind: kindRB, Payload: []byte(`{"t":"b"}`)}})
			return err
		}},
		{"a batch with one key twice", func(ctx context.Context) error {
			w.called("EnqueueBatch")
			a := outbox.EnqueueParams{Kind: kindRB, WorkspaceID: "w1", IdempotencyKey: "twice", Payload: []byte(`{"t":"b"}`)}
			_, err := h.eng.EnqueueBatch(ctx, []outbox.EnqueueParams{a, a})
			return err
		}},
		{"a batch of payloads over 3 MB", func(ctx context.Context) error {
			w.called("EnqueueBatch")
			_, err := h.eng.EnqueueBatch(ctx, slices.Repeat([]outbox.EnqueueParams{{Kind: kindRB, WorkspaceID: "w1", Payload: big}}, 25))
			return err
		}},
		{"a listing of 501", func(ctx context.Context) error {
			w.called("ActionList")
			_, err := h.eng.ActionList(ctx, outbox.ActionListParams{WorkspaceID: "w1", Limit: 501})
			return err
		}},
		{"a listing of an unknown state", func(ctx context.Context) error {
			w.called("ActionList")
			_, err := h.eng.ActionList(ctx, outbox.ActionListParams{WorkspaceID: "w1", State: "LOST"})
			return err
		}},
		{"a listing with a forged cursor", func(ctx context.Context) error {
			w.called("ActionList")
			_, err := h.eng.ActionList(ctx, outbox.ActionListParams{WorkspaceID: "w2", Cursor: w.lastCursor + "x"})
			return err
		}},
		{"a listing with another listing's cursor", func(ctx context.Context) error {
			if w.lastCursor == "" {
				// Not sent: a listing without a cursor is no bad input (and
				// its first page may write the table's cursor key).
				return &outbox.ValidationError{Field: "cursor", Message: "no cursor yet (not sent)"}
			}
			w.called("ActionList")
			_, err := h.eng.ActionList(ctx, outbox.ActionListParams{WorkspaceID: "w3", LaneKey: "q", Cursor: w.lastCursor})
			return err
		}},
		{"a find of a lane without its workspace", func(ctx context.Context) error {
			w.called("ActionFind")
			_, err := h.eng.ActionFind(ctx, outbox.ActionFindParams{LaneKey: "a"})
			return err
		}},
		{"a find of 1001", func(ctx context.Context) error {
			w.called("ActionFind")
			_, err := h.eng.ActionFind(ctx, outbox.ActionFindParams{Limit: 1001})
			return err
		}},
		{"a find of an unknown state", func(ctx context.Context) error {
			w.called("ActionFind")
			_, err := h.eng.ActionFind(ctx, outbox.ActionFindParams{State: "LOST"})
			return err
		}},
		{"a find whose creation times end before they start", func(ctx context.Context) error {
			w.called("ActionFind")
			t := h.now()
			_, err := h.eng.ActionFind(ctx, outbox.ActionFindParams{WorkspaceID: "w1", CreatedFrom: t, CreatedBefore: t.Add(-time.Second)})
			return err
		}},
		{"a find of -1 rows", func(ctx context.Context) error {
			w.called("ActionFind")
			_, err := h.eng.ActionFind(ctx, outbox.ActionFindParams{MaxRows: -1})
			return err
		}},
		{"a find with a cursor that is not one", func(ctx context.Context) error {
			w.called("ActionFind")
			_, err := h.eng.ActionFind(ctx, outbox.ActionFindParams{WorkspaceID: "w1", LaneKey: "a", Cursor: "eyJzIjoibCIsImsiOnsicGsiOiJQIzAifSwicCI6Wy0xXX0"})
			return err
		}},
		{"an engine's layout check of a table not its own", func(ctx context.Context) error {
			w.called("LayoutCheck")
			return onForeign(func(e *outbox.Engine) error { return e.LayoutCheck(ctx) })
		}},
		{"the layout of a table not its own", func(ctx context.Context) error {
			w.called("TableLayout")
			return onForeign(func(e *outbox.Engine) error { _, err := e.TableLayout(ctx); return err })
		}},
		{"an EnsureTable of a table not its own", func(ctx context.Context) error {
			w.called("EnsureTable")
			return onForeign(func(e *outbox.Engine) error { return e.EnsureTable(ctx) })
		}},
		{"a retention pass over a table not its own", func(ctx context.Context) error {
			w.called("Retain")
			return onForeign(func(e *outbox.Engine) error { _, err := e.Retain(ctx); return err })
		}},
		{"a reaper pass over a table not its own", func(ctx context.Context) error {
			w.called("Reap")
			return onForeign(func(e *outbox.Engine) error { _, err := e.Reap(ctx); return err })
		}},
		{"a batch into a table not its own", func(ctx context.Context) error {
			w.called("EnqueueBatch")
			return onForeign(func(e *outbox.Engine) error {
				_, err := e.EnqueueBatch(ctx, []outbox.EnqueueParams{{Kind: kindRB, WorkspaceID: "w1", LaneKey: "a", Payload: []byte(`{"t":"b"}`)}})
				return err
			})
		}},
		{"an enqueue into a table not its own", func(ctx context.Context) error {
			w.called("Enqueue")
			return onForeign(func(e *outbox.Engine) error {
				_, err := e.Enqueue(ctx, outbox.EnqueueParams{Kind: kindRB, WorkspaceID: "w1", Payload: []byte(`{"t":"b"}`)})
				return err
			})
		}},
		{"a lane find's cursor naming partition -1", laneFind(`[-1]`)},
		{"a lane find's cursor naming a partition twice", laneFind(`[0,0]`)},
		{"a lane find's cursor carrying 11 partitions", laneFind(`[0,1,2,3,4,5,6,7,8,9,10]`)},
		{"a read of an id made up from another action's key (another time)", func(ctx context.Context) error {
			w.called("ActionGet")
			_, err := h.eng.ActionGet(ctx, w.madeUpID())
			return err
		}},
		{"a cancel of an id made up from another action's key", func(ctx context.Context) error {
			w.called("Cancel")
			_, err := h.eng.Cancel(ctx, w.madeUpID())
			return err
		}},
		{"an admit of an id made up from another action's key", func(ctx context.Context) error {
			w.called("Admit")
			_, err := h.eng.Admit(ctx, w.madeUpID())
			return err
		}},
		{"a read of an id that is none", func(ctx context.Context) error {
			w.called("ActionGet")
			_, err := h.eng.ActionGet(ctx, "not-an-id")
			return err
		}},
		{"the workspaces of no subject", func(ctx context.Context) error {
			w.called("SubjectWorkspaces")
			_, err := h.eng.SubjectWorkspaces(ctx, "")
			return err
		}},
		{"an event of an unknown status", func(ctx context.Context) error {
			w.called("DeliveryRecord")
			_, err := h.eng.DeliveryRecord(ctx, "x", outbox.DeliveryEvent{Status: "LOST"})
			return err
		}},
		{"a partition count of 0", func(ctx context.Context) error {
			w.called("PartitionsSet")
			return h.eng.PartitionsSet(ctx, 0)
		}},
		{"a partition count of 1025", func(ctx context.Context) error {
			w.called("PartitionsSet")
			return h.eng.PartitionsSet(ctx, outbox.MaxPartitionCount+1)
		}},
		{"an attempt finished without an outcome", func(ctx context.Context) error {
			w.called("AttemptFinish")
			_, err := h.eng.AttemptFinish(ctx, outbox.Action{}, outbox.Result{})
			return err
		}},
		{"a drain of partition -1", func(ctx context.Context) error {
			w.called("DrainPartition")
			_, err := h.eng.DrainPartition(ctx, -1, outbox.DrainParams{})
			return err
		}},
		{"an erasure without a subject", func(ctx context.Context) error {
			w.called("SubjectErase")
			_, err := h.eng.SubjectErase(ctx, outbox.SubjectEraseParams{WorkspaceID: "w1"})
			return err
		}},
		{"an admit of an ended action", func(ctx context.Context) error {
			w.called("Admit")
			for _, id := range sortedKeys(w.rows) {
				if r := w.rows[id]; r.gone == "" && r.tok != nil && state(r.item).Ended() && !w.nearTTL(r) && w.rng.IntN(3) == 0 {
					_, err := h.eng.Admit(ctx, str(r.item, "id"))
					return err
				}
			}
			_, err := h.eng.Admit(ctx, "no-such-action")
			return err
		}},
	}
	cs = append(cs, badCase{"a stream record's key that names no partition", func(context.Context) error {
		w.called("PartitionOf")
		for _, pk := range []string{"P#7a", fmt.Sprintf("P#%d", outbox.MaxPartitions), "X#1"} {
			if _, ok := h.eng.PartitionOf(pk); ok {
				return nil // taken for a partition: accepted
			}
		}
		return &outbox.ValidationError{Field: "pk", Message: "names no partition (refused)"}
	}}, badCase{"an engine without a DynamoDB client", func(context.Context) error {
		_, err := outbox.New(nil, h.clk, h.reg, w.cfg)
		if err == nil {
			return nil
		}
		return &outbox.ValidationError{Field: "db", Message: err.Error()}
	}})
	for _, c := range w.badConfigs() {
		cs = append(cs, badCase{"an engine with " + c.name, func(context.Context) error {
			_, err := outbox.New(w.wrap, h.clk, h.reg, c.cfg)
			return err
		}})
	}
	return cs
}

// badConfig is one configuration a deploy may get wrong.
type badConfig struct {
	name string
	cfg  outbox.Config
}

// badConfigs are the run's configuration with one rule of design.md §13
// (Config.Validate) broken each.
func (w *world) badConfigs() []badConfig {
	var out []badConfig
	add := func(name string, f func(c *outbox.Config)) {
		c := w.cfg
		f(&c)
		out = append(out, badConfig{name, c})
	}
	add("no table", func(c *outbox.Config) { c.Table = "" })
	add("1025 partitions", func(c *outbox.Config) { c.Partitions = outbox.MaxPartitionCount + 1 })
	add("a lease of 500ms", func(c *outbox.Config) { c.Lease = 500 * time.Millisecond })
	add("a negative write margin", func(c *outbox.Config) { c.WriteMargin = -time.Second })
	add("a write margin as long as the lease", func(c *outbox.Config) { c.WriteMargin = c.Lease })
	add("a negative clock skew", func(c *outbox.Config) { c.ClockSkew = -time.Second })
	add("a clock skew as long as the write margin", func(c *outbox.Config) { c.ClockSkew = c.WriteMargin })
	add("a lease within write margin and skew", func(c *outbox.Config) { c.Lease = c.WriteMargin + c.ClockSkew })
	add("a negative retry base", func(c *outbox.Config) { c.RetryBase = -time.Second })
	add("a retry cap below its base", func(c *outbox.Config) { c.RetryCap = c.RetryBase / 2 })
	add("batches of 100", func(c *outbox.Config) { c.BatchSize = outbox.MaxTransactItems })
	add("-1 attempts", func(c *outbox.Config) { c.MaxAttempts = -1 })
	add("a retention of a minute", func(c *outbox.Config) { c.Retention = time.Minute })
	add("a row cap of -1", func(c *outbox.Config) { c.RowCap = -1 })
	add("a negative stuck time", func(c *outbox.Config) { c.StuckAfter = -time.Second })
	add("payloads up to 1 MB", func(c *outbox.Config) { c.MaxPayload = 1 << 20 })
	add("seq blocks of 20000", func(c *outbox.Config) { c.SeqBlock = 20000 })
	add("20000 deferrals", func(c *outbox.Config) { c.MaxDeferrals = 20000 })
	add("a defer time below the retry base", func(c *outbox.Config) { c.MaxDeferTime = c.RetryBase / 2 })
	return out
}

// badKinds are kinds a build may try to register wrongly.
func (w *world) badKinds() []outbox.Adapter {
	ad := func(s outbox.KindSpec) outbox.Adapter { return &adapter{w: w, spec: s} }
	idem := outbox.IdempotentReceiver
	return []outbox.Adapter{
		nil,
		ad(outbox.KindSpec{Class: idem}),
		ad(outbox.KindSpec{Name: "a#b", Class: idem}),
		ad(outbox.KindSpec{Name: "classless"}),
		ad(outbox.KindSpec{Name: "single-with-variants", Class: idem, Variants: []string{"v1"}}),
		ad(outbox.KindSpec{Name: "tagged-without-tag", Class: idem, VariantMode: outbox.TaggedShape, Variants: []string{"v1"}}),
		ad(outbox.KindSpec{Name: "tagged-without-variants", Class: idem, VariantMode: outbox.TaggedShape, TagProperty: "v"}),
		ad(outbox.KindSpec{Name: "suffix-without-variants", Class: idem, VariantMode: outbox.KeySuffix}),
		ad(outbox.KindSpec{Name: "unknown-mode", Class: idem, VariantMode: 7}),
		ad(outbox.KindSpec{Name: "negative-retention", Class: idem, Retention: -time.Hour}),
		ad(outbox.KindSpec{Name: "read-back-without-reading", Class: outbox.ReadBack}),
		ad(outbox.KindSpec{Name: kindRB, Class: idem}),
	}
}

// badKindStep registers a kind wrongly into a host's registry: refused,
// and the registry unchanged.
func (w *world) badKindStep() {
	h := w.hosts[w.rng.IntN(3)]
	kinds := w.badKinds()
	a := kinds[w.rng.IntN(len(kinds))]
	before := h.reg.Kinds()
	name := "a nil adapter"
	if a != nil {
		s := a.Spec()
		name = fmt.Sprintf("kind %q (%s, mode %d)", s.Name, s.Class, s.VariantMode)
	}
	err := h.reg.Register(a)
	w.res.Ops["bad kind"]++
	switch {
	case err == nil:
		w.violate("bad-input", nil, "%s: registering %s was accepted", h.name, name)
	case !slices.Equal(before, h.reg.Kinds()):
		w.violate("bad-input", nil, "%s: registering %s was refused (%v) and changed the registry", h.name, name, err)
	default:
		w.tracef(nil, "%s: registering %s refused (%s)", h.name, name, shortErr(err))
	}
}

// validPayload is the simulated adapters' Validate: a payload names its
// token ("t", a non-empty string). The read-back kind answers a
// *PayloadError, the others a plain error (the engine makes it one).
func validPayload(class outbox.DeliveryClass, payload json.RawMessage) error {
	var obj struct {
		T *string `json:"t"`
	}
	if json.Unmarshal(payload, &obj) == nil && obj.T != nil && *obj.T != "" {
		return nil
	}
	if class == outbox.ReadBack {
		return &outbox.PayloadError{Field: "t", Message: "must name the token"}
	}
	return errors.New("the payload names no token")
}

// madeUpID is the id of an action the table holds with another time in
// it: the same partition and seq, so its row is read, and not that row's
// id (an id made up from another's key names nothing). "none" when the
// table holds none yet.
func (w *world) madeUpID() string {
	for _, k := range sortedKeys(w.rows) {
		if id := str(w.rows[k].item, "id"); len(id) > 1 && w.rows[k].gone == "" {
			c := byte('0')
			if id[0] == '0' {
				c = '1'
			}
			return string(c) + id[1:]
		}
	}
	return "none"
}

// The tables a deploy may name by mistake (onForeign), and the items each
// holds: of Ferry's key schema without the marker, with a marker of no
// layout version (a table created before v0.1.0), of layout 0, with a
// newer layout's.
var foreignItems = map[string]int{"bare": 0, "pre": 1, "zero": 1, "newer": 1}

// foreignTable creates the foreign tables the first time, and draws one.
func (w *world) foreignTable() string {
	if !w.foreignReady {
		w.foreignReady = true
		for _, t := range []string{"bare", "pre", "zero", "newer"} {
			if _, err := w.db.CreateTable(context.Background(), outbox.TableInput(t)); err != nil {
				panic(fmt.Sprintf("sim: table %s: %v", t, err))
			}
			it := outbox.LayoutMarker()
			switch t {
			case "bare":
				continue
			case "pre":
				delete(it, "lv")
			case "zero":
				it["lv"] = &types.AttributeValueMemberN{Value: "0"}
			case "newer":
				it["lv"] = &types.AttributeValueMemberN{Value: strconv.Itoa(outbox.Layout + 1)}
			}
			if _, err := w.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(t), Item: it}); err != nil {
				panic(fmt.Sprintf("sim: table %s: %v", t, err))
			}
		}
	}
	return []string{"bare", "pre", "zero", "newer"}[w.srng.IntN(4)]
}

// itemCount counts a table's items (a scan outside the run's faults).
func (w *world) itemCount(table string) int {
	out, err := w.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		panic(fmt.Sprintf("sim: scan %s: %v", table, err))
	}
	return len(out.Items)
}
