// Package consoletest holds what the console's tests share: a loopback
// stand-in of CloudWatch's GetMetricData.
package consoletest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
)

// CloudWatch answers GetMetricData over loopback as CloudWatch does for
// the AWS SDK (the RPC v2 CBOR protocol): each query gets, at every
// minute from StartTime to EndTime, the value Values gives for its id. It
// records the queries it was asked.
type CloudWatch struct {
	*httptest.Server
	// Values is the value of query id at minute t (ok false: no
	// datapoint).
	Values func(id string, t time.Time) (v float64, ok bool)

	mu      sync.Mutex
	queries []Query
}

// Query is one MetricDataQuery as asked.
type Query struct {
	ID, Expression, MetricName, Stat string
	Dimensions                       map[string]string
}

// NewCloudWatch starts the stand-in; Close stops it.
func NewCloudWatch(values func(id string, t time.Time) (float64, bool)) *CloudWatch {
	c := &CloudWatch{Values: values}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	return c
}

// Queries returns the queries asked so far.
func (c *CloudWatch) Queries() []Query {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Query(nil), c.queries...)
}

func (c *CloudWatch) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || !strings.HasSuffix(r.URL.Path, "/operation/GetMetricData") {
		http.Error(w, "not GetMetricData", http.StatusBadRequest)
		return
	}
	v, err := cbor.Decode(body)
	in, ok := v.(cbor.Map)
	if err != nil || !ok {
		http.Error(w, "not CBOR", http.StatusBadRequest)
		return
	}
	start, _ := cbor.AsTime(in["StartTime"])
	end, _ := cbor.AsTime(in["EndTime"])
	qs, _ := in["MetricDataQueries"].(cbor.List)
	var results cbor.List
	for _, q := range qs {
		qm, _ := q.(cbor.Map)
		query := decodeQuery(qm)
		c.mu.Lock()
		c.queries = append(c.queries, query)
		c.mu.Unlock()
		var ts, vals cbor.List
		for t := start.Truncate(time.Minute); t.Before(end); t = t.Add(time.Minute) {
			if val, ok := c.Values(query.ID, t); ok {
				ts = append(ts, &cbor.Tag{ID: 1, Value: cbor.Float64(float64(t.Unix()))})
				vals = append(vals, cbor.Float64(val))
			}
		}
		results = append(results, cbor.Map{"Id": cbor.String(query.ID), "Label": cbor.String(query.ID),
			"Timestamps": ts, "Values": vals, "StatusCode": cbor.String("Complete")})
	}
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	_, _ = w.Write(cbor.Encode(cbor.Map{"MetricDataResults": results, "Messages": cbor.List{}}))
}

func str(v cbor.Value) string {
	s, _ := v.(cbor.String)
	return string(s)
}

func decodeQuery(qm cbor.Map) Query {
	q := Query{ID: str(qm["Id"]), Expression: str(qm["Expression"]), Dimensions: map[string]string{}}
	if ms, ok := qm["MetricStat"].(cbor.Map); ok {
		q.Stat = str(ms["Stat"])
		if m, ok := ms["Metric"].(cbor.Map); ok {
			q.MetricName = str(m["MetricName"])
			dims, _ := m["Dimensions"].(cbor.List)
			for _, d := range dims {
				dm, _ := d.(cbor.Map)
				q.Dimensions[str(dm["Name"])] = str(dm["Value"])
			}
		}
	}
	return q
}
