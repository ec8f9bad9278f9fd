package ddblocal

import (
	"math"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Capacity rules (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html):
// a write unit per 1 KB of item, rounded up; a read unit per 4 KB, halved
// for an eventually consistent read; transactional reads and writes cost
// double; every index entry written or deleted costs write units of its
// projected size, and an index key change is a delete and a put.
//
// Choices where the documentation leaves room, so benchmarks read them right:
//   - PutItem, UpdateItem and DeleteItem are billed on the larger of the old
//     and the new item; a write refused by its condition still costs the
//     units of the item it read (at least 1).
//   - An index write caused by a transaction is billed once, not doubled
//     (indexes are updated after the commit); a ConditionCheck costs 2 units
//     per KB like a transactional write.
//   - A cancelled transaction costs 1 unit per KB of each item it read
//     (the prepare phase); a replayed idempotent one costs strongly
//     consistent reads of its items.
//   - Query and Scan are billed on the bytes read before the filter, rounded
//     up once per call; an index read is booked to the index.
//   - TTL deletions cost nothing.

const (
	writeUnitBytes = 1024
	readUnitBytes  = 4096
)

func writeUnits(size int) float64 {
	if size <= 0 {
		return 1
	}
	return math.Ceil(float64(size) / writeUnitBytes)
}

func readUnits(size int, consistent bool) float64 {
	u := 1.0
	if size > 0 {
		u = math.Ceil(float64(size) / readUnitBytes)
	}
	if !consistent {
		u /= 2
	}
	return u
}

// IndexCapacity is the capacity consumed by one index.
type IndexCapacity struct {
	ReadUnits  float64
	WriteUnits float64
}

// CapacityStats is the cumulative capacity a table consumed since the
// engine started (or since ResetCapacity): base-table units, units per index,
// and calls per operation.
type CapacityStats struct {
	ReadUnits  float64
	WriteUnits float64
	Indexes    map[string]IndexCapacity
	Calls      map[string]int64
}

// TotalWriteUnits is the table's and its indexes' write units together:
// what on-demand billing charges.
func (s CapacityStats) TotalWriteUnits() float64 {
	w := s.WriteUnits
	for _, ix := range s.Indexes {
		w += ix.WriteUnits
	}
	return w
}

// TotalReadUnits is the table's and its indexes' read units together.
func (s CapacityStats) TotalReadUnits() float64 {
	r := s.ReadUnits
	for _, ix := range s.Indexes {
		r += ix.ReadUnits
	}
	return r
}

// Capacity returns a copy of the cumulative counters of a table.
func (db *DB) Capacity(tableName string) CapacityStats {
	db.statsMu.Lock()
	defer db.statsMu.Unlock()
	out := CapacityStats{Indexes: map[string]IndexCapacity{}, Calls: map[string]int64{}}
	s, ok := db.stats[tableName]
	if !ok {
		return out
	}
	out.ReadUnits, out.WriteUnits = s.ReadUnits, s.WriteUnits
	for k, v := range s.Indexes {
		out.Indexes[k] = v
	}
	for k, v := range s.Calls {
		out.Calls[k] = v
	}
	return out
}

// ResetCapacity zeroes every counter (e.g. after a benchmark's setup).
func (db *DB) ResetCapacity() {
	db.statsMu.Lock()
	defer db.statsMu.Unlock()
	db.stats = map[string]*CapacityStats{}
}

func (db *DB) statsFor(tableName string) *CapacityStats {
	s, ok := db.stats[tableName]
	if !ok {
		s = &CapacityStats{Indexes: map[string]IndexCapacity{}, Calls: map[string]int64{}}
		db.stats[tableName] = s
	}
	return s
}

func (db *DB) countCall(tableName, op string) {
	db.statsMu.Lock()
	defer db.statsMu.Unlock()
	db.statsFor(tableName).Calls[op]++
}

// consumption is what one call consumed in one table.
type consumption struct {
	table   *table
	read    float64
	write   float64
	indexes map[string]*IndexCapacity
}

// usage is what one call consumed, per table, in first-use order.
type usage struct {
	order []string
	per   map[string]*consumption
}

func (u *usage) of(t *table) *consumption {
	if u.per == nil {
		u.per = map[string]*consumption{}
	}
	c, ok := u.per[t.schema.name]
	if !ok {
		c = &consumption{table: t, indexes: map[string]*IndexCapacity{}}
		u.per[t.schema.name] = c
		u.order = append(u.order, t.schema.name)
	}
	return c
}

func (c *consumption) index(name string) *IndexCapacity {
	ic, ok := c.indexes[name]
	if !ok {
		ic = &IndexCapacity{}
		c.indexes[name] = ic
	}
	return ic
}

// addWrite books a base write of units and the index writes of a commit,
// each multiplied by factor (2 inside a transaction).
func (c *consumption) addWrite(units float64, w writeOutcome, factor float64) {
	c.write += units * factor
	for i, u := range w.indexUnits {
		if u > 0 {
			c.index(c.table.indexes[i].schema.name).WriteUnits += u * factor
		}
	}
}

// record adds the call's consumption to the cumulative counters.
func (db *DB) record(u *usage) {
	db.statsMu.Lock()
	defer db.statsMu.Unlock()
	for _, name := range u.order {
		c := u.per[name]
		s := db.statsFor(name)
		s.ReadUnits += c.read
		s.WriteUnits += c.write
		for ix, ic := range c.indexes {
			cur := s.Indexes[ix]
			cur.ReadUnits += ic.ReadUnits
			cur.WriteUnits += ic.WriteUnits
			s.Indexes[ix] = cur
		}
	}
}

// report renders the consumption as DynamoDB's ConsumedCapacity list for
// ReturnConsumedCapacity mode (nil for NONE).
func (u *usage) report(mode types.ReturnConsumedCapacity) []types.ConsumedCapacity {
	if mode != types.ReturnConsumedCapacityTotal && mode != types.ReturnConsumedCapacityIndexes {
		return nil
	}
	out := make([]types.ConsumedCapacity, 0, len(u.order))
	for _, name := range u.order {
		c := u.per[name]
		r, w := c.read, c.write
		cc := types.ConsumedCapacity{TableName: aws.String(name)}
		var gsi, lsi map[string]types.Capacity
		for _, ix := range c.table.indexes {
			ic, ok := c.indexes[ix.schema.name]
			if !ok {
				continue
			}
			r += ic.ReadUnits
			w += ic.WriteUnits
			capac := capacityOf(ic.ReadUnits, ic.WriteUnits)
			if ix.schema.global {
				if gsi == nil {
					gsi = map[string]types.Capacity{}
				}
				gsi[ix.schema.name] = capac
			} else {
				if lsi == nil {
					lsi = map[string]types.Capacity{}
				}
				lsi[ix.schema.name] = capac
			}
		}
		cc.CapacityUnits = aws.Float64(r + w)
		if r > 0 {
			cc.ReadCapacityUnits = aws.Float64(r)
		}
		if w > 0 {
			cc.WriteCapacityUnits = aws.Float64(w)
		}
		if mode == types.ReturnConsumedCapacityIndexes {
			t := capacityOf(c.read, c.write)
			cc.Table = &t
			cc.GlobalSecondaryIndexes = gsi
			cc.LocalSecondaryIndexes = lsi
		}
		out = append(out, cc)
	}
	return out
}

func (u *usage) single(mode types.ReturnConsumedCapacity) *types.ConsumedCapacity {
	r := u.report(mode)
	if len(r) == 0 {
		return nil
	}
	return &r[0]
}

func capacityOf(r, w float64) types.Capacity {
	c := types.Capacity{CapacityUnits: aws.Float64(r + w)}
	if r > 0 {
		c.ReadCapacityUnits = aws.Float64(r)
	}
	if w > 0 {
		c.WriteCapacityUnits = aws.Float64(w)
	}
	return c
}
