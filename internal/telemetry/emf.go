package telemetry

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/version"
)

// Namespace is the CloudWatch namespace of every Ferry metric.
const Namespace = "Ferry"

// Unit is a CloudWatch metric unit.
type Unit string

// The units Ferry uses.
const (
	UnitCount   Unit = "Count"
	UnitSeconds Unit = "Seconds"
)

// Dim is one metric dimension (name and value).
type Dim struct {
	Name, Value string
}

// Metrics writes CloudWatch metrics in the Embedded Metric Format. Counters
// accumulate until Flush; gauges are written at once. It is safe for
// concurrent use.
type Metrics struct {
	w   io.Writer
	clk clock.Clock
	// props are written on every line as plain properties (not dimensions),
	// e.g. the function's name, so a line can be traced without multiplying
	// the metric's dimension sets.
	props map[string]string
	// base are dimensions every metric carries before its own, e.g. the
	// stack's name, so that two deployments in one account and region
	// never mix their metrics.
	base []Dim

	mu       sync.Mutex
	counters map[string]*counter // by dimension-set key
	order    []string
}

type counter struct {
	dims   []Dim
	values map[string]float64 // metric name -> sum
	units  map[string]Unit
}

// KeyVersion is the plain property (and log key) naming the build that
// wrote a line (internal/version). It is never a dimension: a new version
// must not start new metric series.
const KeyVersion = "version"

// NewMetrics returns Metrics writing EMF lines to w, stamped by clk. props
// are added to every line as plain properties, and so is the build's
// version under KeyVersion unless props name one.
func NewMetrics(w io.Writer, clk clock.Clock, props map[string]string) *Metrics {
	all := make(map[string]string, len(props)+1)
	all[KeyVersion] = version.String()
	maps.Copy(all, props)
	return &Metrics{w: w, clk: clk, props: all, counters: map[string]*counter{}}
}

// DimStack names the dimension holding the deployment's stack name
// (FERRY_STACK), which WithBase puts on every metric of a function.
const DimStack = "Stack"

// WithBase makes every metric written from now on carry dims before its
// own dimensions (an empty value is left out). It returns m; call it before
// the first metric.
func (m *Metrics) WithBase(dims ...Dim) *Metrics {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.base = m.base[:0]
	for _, d := range dims {
		if d.Value != "" {
			m.base = append(m.base, d)
		}
	}
	return m
}

// Count adds n to the counter name under the dimensions dims.
func (m *Metrics) Count(name string, n float64, dims ...Dim) {
	if m == nil {
		return
	}
	key := dimKey(dims)
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.counters[key]
	if !ok {
		c = &counter{dims: append([]Dim(nil), dims...), values: map[string]float64{}, units: map[string]Unit{}}
		m.counters[key] = c
		m.order = append(m.order, key)
	}
	c.values[name] += n
	c.units[name] = UnitCount
}

// Gauge is one metric value written at once.
type Gauge struct {
	Name  string
	Unit  Unit
	Value float64
}

// Gauges writes one EMF line holding gs under the dimensions dims.
func (m *Metrics) Gauges(dims []Dim, gs ...Gauge) error {
	if m == nil || len(gs) == 0 {
		return nil
	}
	values := make(map[string]float64, len(gs))
	units := make(map[string]Unit, len(gs))
	names := make([]string, 0, len(gs))
	for _, g := range gs {
		values[g.Name] = g.Value
		units[g.Name] = g.Unit
		names = append(names, g.Name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writeLine(dims, names, values, units)
}

// Flush writes every accumulated counter (one EMF line per dimension set) and
// resets them.
func (m *Metrics) Flush() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var firstErr error
	for _, key := range m.order {
		c := m.counters[key]
		names := make([]string, 0, len(c.values))
		for n := range c.values {
			names = append(names, n)
		}
		sort.Strings(names)
		if err := m.writeLine(c.dims, names, c.values, c.units); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	m.counters = map[string]*counter{}
	m.order = nil
	return firstErr
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit Unit   `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

// writeLine writes one EMF document; m.mu must be held.
func (m *Metrics) writeLine(dims []Dim, names []string, values map[string]float64, units map[string]Unit) error {
	doc := make(map[string]any, len(m.props)+len(m.base)+len(dims)+len(names)+1)
	for k, v := range m.props {
		doc[k] = v
	}
	dimNames := make([]string, 0, len(m.base)+len(dims))
	for _, d := range append(append([]Dim(nil), m.base...), dims...) {
		doc[d.Name] = d.Value
		dimNames = append(dimNames, d.Name)
	}
	metrics := make([]emfMetric, 0, len(names))
	for _, n := range names {
		doc[n] = values[n]
		metrics = append(metrics, emfMetric{Name: n, Unit: units[n]})
	}
	doc["_aws"] = emfMeta{
		Timestamp: m.clk.Now().UnixMilli(),
		CloudWatchMetrics: []emfDirective{{
			Namespace:  Namespace,
			Dimensions: [][]string{dimNames},
			Metrics:    metrics,
		}},
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("error encoding EMF line: %w", err)
	}
	if _, err := m.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("error writing EMF line: %w", err)
	}
	return nil
}

func dimKey(dims []Dim) string {
	var b strings.Builder
	for _, d := range dims {
		b.WriteString(d.Name)
		b.WriteByte('=')
		b.WriteString(d.Value)
		b.WriteByte(0)
	}
	return b.String()
}

// Seconds converts d to the float seconds CloudWatch expects.
func Seconds(d time.Duration) float64 { return d.Seconds() }
