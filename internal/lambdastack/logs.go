package lambdastack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
)

// Logs is the local CloudWatch Logs: every function's lines, prefixed with
// the function and instance, go to Out (one stream per function, as one log
// group per function on AWS) and, with Dir, to Dir/<function>.log. Lines in
// the Embedded Metric Format are not printed: their metrics are added up
// and Summary prints them as counters at the end.
type Logs struct {
	Out io.Writer
	Dir string
	// ShowEMF prints the EMF lines too.
	ShowEMF bool
	// OnEMF, when set, sees every EMF line (the console's chart).
	OnEMF func(line []byte)

	mu      sync.Mutex
	files   map[string]*os.File
	metrics map[metricKey]*metricSum
	lines   map[string]int
}

type metricKey struct {
	function, name, dims string
}

type metricSum struct {
	sum, max float64
	n        int
	unit     string
}

// Writer returns the writer of one instance's output: it splits lines and
// logs each under the function's name and the instance's label.
func (l *Logs) Writer(function, label string) io.WriteCloser {
	return &lineWriter{logs: l, function: function, label: label}
}

// Event logs a line of ferry local's own about a function (an invocation
// refused, a batch dropped…).
func (l *Logs) Event(function, label, msg string) {
	l.line(function, label, []byte("[ferry local] "+msg))
}

func (l *Logs) line(function, label string, line []byte) {
	line = bytes.TrimRight(line, "\r")
	emf := l.collectEMF(function, line)
	if emf && l.OnEMF != nil {
		l.OnEMF(line)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lines == nil {
		l.lines = map[string]int{}
	}
	l.lines[function]++
	if l.Dir != "" {
		f := l.file(function)
		if f != nil {
			fmt.Fprintf(f, "%s %s\n", label, line)
		}
	}
	if l.Out != nil && (!emf || l.ShowEMF) {
		fmt.Fprintf(l.Out, "%-12s| %s\n", label, line)
	}
}

// file returns the function's log file; l.mu is held.
func (l *Logs) file(function string) *os.File {
	if l.files == nil {
		l.files = map[string]*os.File{}
	}
	if f, ok := l.files[function]; ok {
		return f
	}
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		l.files[function] = nil
		return nil
	}
	f, err := os.OpenFile(filepath.Join(l.Dir, function+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		f = nil
	}
	l.files[function] = f
	return f
}

// collectEMF adds the metrics of an EMF line up and reports whether the
// line was one.
func (l *Logs) collectEMF(function string, line []byte) bool {
	if !bytes.Contains(line, []byte(`"_aws"`)) {
		return false
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(line, &doc) != nil {
		return false
	}
	var meta struct {
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
				Unit string `json:"Unit"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	}
	if json.Unmarshal(doc["_aws"], &meta) != nil || len(meta.CloudWatchMetrics) == 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.metrics == nil {
		l.metrics = map[metricKey]*metricSum{}
	}
	for _, d := range meta.CloudWatchMetrics {
		var dims []string
		if len(d.Dimensions) > 0 {
			for _, name := range d.Dimensions[0] {
				var v string
				_ = json.Unmarshal(doc[name], &v)
				dims = append(dims, name+"="+v)
			}
		}
		for _, m := range d.Metrics {
			for _, v := range metricValues(doc[m.Name]) {
				k := metricKey{function, m.Name, strings.Join(dims, ",")}
				s := l.metrics[k]
				if s == nil {
					s = &metricSum{max: v, unit: m.Unit}
					l.metrics[k] = s
				}
				s.sum += v
				s.n++
				s.max = max(s.max, v)
			}
		}
	}
	return true
}

// metricValues reads an EMF value: a number or a list of numbers.
func metricValues(raw json.RawMessage) []float64 {
	var one float64
	if json.Unmarshal(raw, &one) == nil {
		return []float64{one}
	}
	var many []float64
	_ = json.Unmarshal(raw, &many)
	return many
}

// Metric returns the sum of a function's metric over every dimension set
// whose dimensions contain dims ("Kind=webhook").
func (l *Logs) Metric(function, name string, dims ...string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var total float64
	for k, s := range l.metrics {
		if k.function != function || k.name != name {
			continue
		}
		all := true
		for _, d := range dims {
			if !strings.Contains(","+k.dims+",", ","+d+",") {
				all = false
			}
		}
		if all {
			total += s.sum
		}
	}
	return total
}

// Summary writes the metrics seen, per function, metric and dimensions:
// their sum, how many values and the largest (gauges read better by it).
// Series that were zero throughout are left out.
func (l *Logs) Summary(w io.Writer) {
	l.mu.Lock()
	keys := make([]metricKey, 0, len(l.metrics))
	for k := range l.metrics {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.function != b.function {
			return a.function < b.function
		}
		if a.name != b.name {
			return a.name < b.name
		}
		return a.dims < b.dims
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "function\tmetric\tdimensions\tsum\tvalues\tmax")
	for _, k := range keys {
		s := l.metrics[k]
		if s.sum == 0 && s.max == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%g\t%d\t%g\n", k.function, k.name, k.dims, s.sum, s.n, s.max)
	}
	l.mu.Unlock()
	_ = tw.Flush()
}

// Close closes the log files.
func (l *Logs) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.files {
		if f != nil {
			_ = f.Close()
		}
	}
	l.files = nil
}

// lineWriter splits a process's output into lines.
type lineWriter struct {
	logs            *Logs
	function, label string
	mu              sync.Mutex
	buf             []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.logs.line(w.function, w.label, w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.logs.line(w.function, w.label, w.buf)
		w.buf = nil
	}
	return nil
}
