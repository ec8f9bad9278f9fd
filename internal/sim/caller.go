package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/outbox"
)

// Enqueues inside the caller's own transaction (design.md §4.5, issue 27):
// a caller asks EnqueueItems for the items that create an action and sends
// them in its own TransactWriteItems, with an item of its own (a row of its
// table "app", put only if absent: its business rule). The transaction
// may be sent at once or steps later (its reads go stale meanwhile; items
// older than outbox.MapTTL are prepared again, as §4.5 asks), may
// meet the caller's own conflict (its row is there), lose its answer (the
// caller sends it again with the same token, then reads its own row to
// learn what happened), or be refused (Resolve says whether the key was
// used, else the caller prepares again). The action must exist exactly
// when the caller's row does (checkCaller).

const appTable = "app"

// callerTx is a caller's transaction prepared and not sent yet.
type callerTx struct {
	h      *host
	t      *token
	pe     *outbox.PreparedEnqueue
	resend bool
	tries  int
	app    string // the caller's row's key
	// prepared: when EnqueueItems made the items (the run's clock); they
	// are sent within outbox.MapTTL of it or prepared again (design.md
	// §4.5).
	prepared time.Time
}

func (w *world) ensureAppTable() {
	if w.appReady {
		return
	}
	w.appReady = true
	_, err := w.db.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(appTable),
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		panic(fmt.Sprintf("sim: app table: %v", err))
	}
}

// callerStep prepares a caller's transaction, and sends it now or leaves
// it for callerCommitStep.
func (w *world) callerStep() {
	w.ensureAppTable()
	h, t, resend := w.enqueueSubject()
	if h == w.future {
		h = w.hosts[0]
		t, resend = w.newToken(h), false
	}
	tx := &callerTx{h: h, t: t, resend: resend, app: fmt.Sprintf("APP#%s#%d", t.name, w.nproc+1)}
	if w.rng.IntN(8) == 0 {
		// The caller's own rule refuses: its row is there already.
		w.appPut(tx.app)
		w.appPre[tx.app] = true
		w.res.Ops["caller own conflict"]++
	}
	if !w.callerPrepare(tx) {
		return
	}
	if w.rng.IntN(3) == 0 {
		w.pendingTx = append(w.pendingTx, tx)
		w.tracef(nil, "caller of %s: transaction prepared, sent later", t.name)
		return
	}
	w.callerSend(tx)
}

// callerCommitStep sends a transaction prepared steps ago.
func (w *world) callerCommitStep() {
	if len(w.pendingTx) == 0 {
		return
	}
	i := w.rng.IntN(len(w.pendingTx))
	tx := w.pendingTx[i]
	w.pendingTx = append(w.pendingTx[:i], w.pendingTx[i+1:]...)
	w.res.Ops["caller late send"]++
	if w.clk.Now().Sub(tx.prepared) > outbox.MapTTL {
		// Items are sent within MapTTL of EnqueueItems (design.md §4.5):
		// later, the partition they name may have been retired since.
		w.res.Ops["caller prepared again (stale items)"]++
		w.tracef(nil, "caller of %s: items prepared %s ago: prepared again", tx.t.name, w.clk.Now().Sub(tx.prepared).Round(time.Millisecond))
		if !w.callerPrepare(tx) {
			return
		}
	}
	w.callerSend(tx)
}

// enqueueSubject draws the host and token of an enqueue as enqueueStep
// does: a new token, or now and then a keyed one sent again.
func (w *world) enqueueSubject() (*host, *token, bool) {
	var h *host
	switch x := w.rng.IntN(20); {
	case x < 14:
		h = w.hosts[w.rng.IntN(3)]
	case x < 19:
		h = w.hosts[3]
	default:
		h = w.future
	}
	if h == w.future && w.sched.retireRace {
		h = w.hosts[0]
	}
	if h != w.future && w.ntok > 0 && w.rng.IntN(6) == 0 {
		t := w.tokens[fmt.Sprintf("k%d", 1+w.rng.IntN(w.ntok))]
		if t.ikey != "" && t.kind != kindFuture && h.decodes(t.kind, t.variant) {
			return h, t, true
		}
	}
	return h, w.newToken(h), false
}

func (w *world) enqueueParams(h *host, t *token) outbox.EnqueueParams {
	pl := fmt.Sprintf(`{"t":%q}`, t.name)
	if t.variant != "" {
		pl = fmt.Sprintf(`{"t":%q,"v":%q}`, t.name, t.variant)
	}
	ep := outbox.EnqueueParams{Kind: t.kind, WorkspaceID: t.ws, LaneKey: t.lane, IdempotencyKey: t.ikey,
		SubjectID: t.subj, Payload: []byte(pl), Propose: t.propose}
	if w.rng.IntN(8) == 0 {
		ep.ExpiresAt = h.now().Add(randDur(w.rng, 5*time.Second, 10*time.Minute))
	}
	if w.rng.IntN(4) == 0 {
		ep.MaxAttempts = 1 + w.rng.IntN(5)
	}
	if t.expiresIn > 0 {
		ep.ExpiresAt = h.now().Add(t.expiresIn)
	}
	if t.loseFirst {
		ep.MaxAttempts = 8 // room for the read-back after the lost call
	}
	return ep
}

// callerPrepare asks EnqueueItems for the transaction's items.
func (w *world) callerPrepare(tx *callerTx) bool {
	p := w.newProc("enqueue", tx.h)
	w.called("EnqueueItems")
	pe, err := tx.h.eng.EnqueueItems(p.ctx(), w.enqueueParams(tx.h, tx.t))
	if err != nil {
		w.tracef(p, "caller of %s: EnqueueItems: error %s", tx.t.name, shortErr(err))
		return false
	}
	tx.pe, tx.prepared = pe, w.clk.Now()
	w.tracef(p, "caller of %s (%s/%s lane=%s/%s key=%q resend=%v): EnqueueItems %s, %d items",
		tx.t.name, tx.t.kind, tx.t.variant, tx.t.ws, tx.t.lane, tx.t.ikey, tx.resend, keyID(&pe.Action), len(pe.Items))
	return true
}

func (w *world) appPut(pk string) {
	_, err := w.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(appTable),
		Item: map[string]types.AttributeValue{"pk": avStr(pk)}})
	if err != nil {
		panic(fmt.Sprintf("sim: app row: %v", err))
	}
}

// appHas reads the caller's row (consistent, outside the faults).
func (w *world) appHas(pk string) bool {
	out, err := w.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(appTable),
		Key: map[string]types.AttributeValue{"pk": avStr(pk)}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		panic(fmt.Sprintf("sim: app row: %v", err))
	}
	return out.Item != nil
}

// callerSend sends the caller's transaction (again, with the same token,
// after an answer it did not get), then judges what it learned.
func (w *world) callerSend(tx *callerTx) {
	p := w.newProc("enqueue", tx.h)
	items := append(append([]types.TransactWriteItem(nil), tx.pe.Items...), types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(appTable), Item: map[string]types.AttributeValue{"pk": avStr(tx.app)},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}})
	in := &dynamodb.TransactWriteItemsInput{TransactItems: items, ClientRequestToken: aws.String(fmt.Sprintf("%s-%d", tx.app, tx.tries))}
	var err error
	for try := 0; try < 3; try++ {
		_, err = w.wrap.TransactWriteItems(p.ctx(), in)
		if err == nil || isRefused(err) {
			break
		}
	}
	switch {
	case err == nil:
		w.tracef(p, "caller of %s: committed %s", tx.t.name, keyID(&tx.pe.Action))
		w.judgeAck(p, tx.t, &outbox.EnqueueResult{Action: tx.pe.Action}, tx.resend)
	case isRefused(err):
		w.callerRefused(p, tx, err)
	default:
		// No answer: the caller's own row says whether it committed.
		w.res.Ops["caller no answer"]++
		if w.appHas(tx.app) {
			w.tracef(p, "caller of %s: no answer (%s); its row says committed", tx.t.name, shortErr(err))
			w.judgeAck(p, tx.t, &outbox.EnqueueResult{Action: tx.pe.Action}, tx.resend)
		} else {
			w.tracef(p, "caller of %s: no answer (%s); its row says not committed", tx.t.name, shortErr(err))
		}
	}
	w.checkCaller(tx)
}

// isRefused tells a cancelled transaction (a condition refused it).
func isRefused(err error) bool {
	return strings.Contains(err.Error(), "ConditionalCheckFailed")
}

// callerRefused handles a refused transaction: Resolve names the first
// action of a used key; the caller's own rule refusing ends the request;
// anything else (a lane tail moved, a late send) is prepared again.
func (w *world) callerRefused(p *proc, tx *callerTx, txErr error) {
	res, err := tx.pe.Resolve(p.ctx(), txErr)
	switch {
	case err != nil:
		w.tracef(p, "caller of %s: refused; Resolve: error %s", tx.t.name, shortErr(err))
	case res != nil:
		w.tracef(p, "caller of %s: refused; Resolve: existing %s", tx.t.name, keyID(&res.Action))
		w.res.Ops["caller resolved existing"]++
		w.judgeAck(p, tx.t, res, true)
	case w.appHas(tx.app):
		w.tracef(p, "caller of %s: refused by its own rule", tx.t.name)
	case tx.tries < 3:
		tx.tries++
		w.res.Ops["caller prepared again"]++
		w.tracef(p, "caller of %s: refused (%s); prepared again", tx.t.name, shortErr(txErr))
		if w.callerPrepare(tx) {
			w.callerSend(tx)
		}
	}
}

// checkCaller requires the action prepared for a transaction to exist
// exactly when the caller's row does (they commit together or not at all).
func (w *world) checkCaller(tx *callerTx) {
	if w.stopped {
		return
	}
	id := keyID(&tx.pe.Action)
	r := w.rows[id]
	mine := r != nil && r.tok == tx.t && str(r.item, "id") == tx.pe.Action.ID
	// Only a transaction that could have committed: the caller's own
	// conflict refuses it whatever else.
	committed := w.appHas(tx.app) && !w.appPre[tx.app]
	if mine != committed && !(mine && r.gone != "") {
		w.violate("caller-tx", []string{id}, "caller of %s: its row committed=%v, its action %s exists=%v", tx.t.name, committed, id, mine)
	}
}

// judgeAck judges an acknowledged enqueue as enqueue does: a new action is
// in the table with its token; an existing one is the token's own.
func (w *world) judgeAck(p *proc, t *token, res *outbox.EnqueueResult, resend bool) {
	id := keyID(&res.Action)
	if k, ok := w.minted[res.Action.ID]; ok && k != id {
		w.violate("ids", []string{k, id}, "action id %s was given to %s and to %s", res.Action.ID, k, id)
	}
	w.minted[res.Action.ID] = id
	t.acked = true
	if res.Existing {
		known := false
		for _, x := range t.ids {
			known = known || x == id
		}
		if !resend || !known {
			w.violate("idempotency", append([]string{id}, t.ids...), "enqueue of %s answered existing action %s, which is not its own", t.name, id)
		}
		return
	}
	if r := w.rows[id]; r == nil || r.tok != t {
		w.violate("nothing-lost", []string{id}, "acknowledged enqueue of %s (%s) is not in the table", t.name, id)
	}
}

// batchStep enqueues a batch of two to five requests (EnqueueBatch): all
// of them or none, a used key answered with its first action.
func (w *world) batchStep() {
	h := w.hosts[w.rng.IntN(3)]
	n := 2 + w.rng.IntN(4)
	var ts []*token
	var resend []bool
	var ps []outbox.EnqueueParams
	seen := map[string]bool{}
	for range n {
		t, again := w.newToken(h), false
		if w.ntok > 1 && w.rng.IntN(5) == 0 {
			if o := w.tokens[fmt.Sprintf("k%d", 1+w.rng.IntN(w.ntok-1))]; o.ikey != "" && o.kind != kindFuture && !seen[o.name] {
				t, again = o, true
			}
		}
		seen[t.name] = true
		ts, resend = append(ts, t), append(resend, again)
		ps = append(ps, w.enqueueParams(h, t))
	}
	p := w.newProc("enqueue", h)
	w.called("EnqueueBatch")
	rs, err := h.eng.EnqueueBatch(p.ctx(), ps)
	var item *outbox.BatchItemError
	switch {
	case errors.As(err, &item):
		w.tracef(p, "batch of %d: item %d refused: %s", n, item.Index, shortErr(item))
		return
	case err != nil:
		w.tracef(p, "batch of %d: error %s", n, shortErr(err))
		return
	}
	w.res.Ops["batch done"]++
	w.tracef(p, "batch of %d enqueued", n)
	for i := range rs {
		w.judgeAck(p, ts[i], &rs[i], resend[i])
	}
}

// avStr is a string attribute value.
func avStr(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
