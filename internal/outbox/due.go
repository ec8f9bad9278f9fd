package outbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The due index (design.md §3.8): its keys, and the one iterator that pages
// it for the claim, the reaper and the test drain.

func duePK(p int) string { return "D#" + strconv.Itoa(p) }

// timeSK is the sort key of the due index: a time, then the seq so that
// ties keep enqueue order.
func timeSK(t time.Time, seq int64) string {
	ms := t.UnixMilli()
	if ms < 0 {
		ms = 0
	}
	return fmt.Sprintf("%013d#%020d", ms, seq)
}

// maxSeq is the largest seq a due sort key can hold (20 digits).
const maxSeq = int64(1<<63 - 1)

// nextSK is the smallest due sort key after sk: the same time, the next seq.
func nextSK(sk string) string {
	ms, seq, ok := strings.Cut(sk, "#")
	n, err1 := strconv.ParseInt(ms, 10, 64)
	s, err2 := strconv.ParseInt(seq, 10, 64)
	if !ok || err1 != nil || err2 != nil || s == maxSeq {
		return sk + "\x00"
	}
	return timeSK(time.UnixMilli(n), s+1)
}

// dueTime reads the due time a row has in the due index from its sort key,
// so that decisions do not depend on which attributes the index projects.
func dueTime(it map[string]types.AttributeValue) time.Time {
	sk := getS(it, attrDueSK)
	ms, _, ok := strings.Cut(sk, "#")
	if !ok {
		return time.Time{}
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

// dueRow is one action row of the due index, as projected, with its due
// time. An ADMITTED row's NextAttemptAt is its due time (the index keeps it
// in the sort key; `nat` is not projected).
type dueRow struct {
	a   Action
	due time.Time
}

// dueQuery says which part of a partition's due index to read.
type dueQuery struct {
	partition int
	// before, when set, reads only rows due before it; else the whole index.
	before time.Time
	// after, when set, reads only rows whose sort key is greater (a claim
	// past a remembered blocked run, ADR 0012 part 3).
	after string
	// pageSize sizes each page (page counts from 0); nil lets DynamoDB size
	// them (1 MB).
	pageSize func(page int) int
	// maxPages bounds the pages read; 0 reads to the end.
	maxPages int
}

// eachDuePage pages a partition's due index, oldest first, and hands each
// page's action rows to fn; fn returns false to stop after that page.
func (e *Engine) eachDuePage(ctx context.Context, q dueQuery, fn func(rows []dueRow) bool) error {
	names := map[string]string{"#dpk": attrDuePK}
	vals := map[string]types.AttributeValue{":dpk": avS(duePK(q.partition))}
	cond := "#dpk = :dpk"
	switch {
	case q.after != "" && !q.before.IsZero():
		// BETWEEN is inclusive: from the first key after q.after to the
		// last key due before q.before.
		cond += " AND #dsk BETWEEN :from AND :upto"
		names["#dsk"] = attrDueSK
		vals[":from"], vals[":upto"] = avS(nextSK(q.after)), avS(timeSK(q.before.Add(-time.Millisecond), maxSeq))
	case q.after != "":
		cond += " AND #dsk > :after"
		names["#dsk"] = attrDueSK
		vals[":after"] = avS(q.after)
	case !q.before.IsZero():
		cond += " AND #dsk < :upto"
		names["#dsk"] = attrDueSK
		vals[":upto"] = avS(timeSK(q.before, 0))
	}
	var start map[string]types.AttributeValue
	for page := 0; q.maxPages == 0 || page < q.maxPages; page++ {
		in := &dynamodb.QueryInput{
			TableName: e.table(), IndexName: aws.String(IndexDue),
			KeyConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
			ExclusiveStartKey: start,
		}
		if q.pageSize != nil {
			in.Limit = aws.Int32(int32(q.pageSize(page)))
		}
		out, err := e.db.Query(ctx, in)
		if err != nil {
			return fmt.Errorf("error reading due index of partition %d: %w", q.partition, err)
		}
		rows := make([]dueRow, 0, len(out.Items))
		for _, it := range out.Items {
			a, ok := decodeAction(it)
			if !ok {
				continue
			}
			r := dueRow{a: a, due: dueTime(it)}
			if a.State == StateADMITTED {
				r.a.NextAttemptAt = r.due
			}
			rows = append(rows, r)
		}
		if !fn(rows) || out.LastEvaluatedKey == nil {
			return nil
		}
		start = out.LastEvaluatedKey
	}
	return nil
}
