package bench

import (
	"fmt"
	"strings"
	"time"
)

// Public on-demand list prices, us-east-1, as published by AWS and in effect
// since DynamoDB's on-demand price cut of 2024-11-01; read on PricesDate.
const (
	PricesDate      = "2026-12-01"
	PriceWRU        = 0.625 / 1e6  // $ per DynamoDB on-demand write request unit
	PriceRRU        = 0.125 / 1e6  // $ per read request unit
	PriceGBSecond   = 0.0000133334 // $ per Lambda GB-second, arm64 (first 7.5 billion GB-s a month)
	PriceInvocation = 0.20 / 1e6   // $ per Lambda request
	PriceAPIRequest = 1.00 / 1e6   // $ per API Gateway HTTP API request (first 300 million a month)
	priceNote       = "DynamoDB on-demand $0.625 per million write request units and $0.125 per million read request units; Lambda arm64 $0.0000133334 per GB-second and $0.20 per million requests; API Gateway HTTP API $1.00 per million requests (us-east-1 list prices, in effect since 2024-11-01, as read on " + PricesDate + "). DynamoDB Streams reads by a Lambda trigger are free; storage, logs and data transfer are not counted."
)

// Dollars is dollars per million delivered actions, by what is billed.
type Dollars struct {
	DynamoDB   float64 // write and read request units
	LambdaGBs  float64 // enqueue, drainer and reaper duration
	LambdaReqs float64 // invocations
	API        float64 // the enqueue requests through API Gateway
}

// Total is the sum.
func (c Dollars) Total() float64 { return c.DynamoDB + c.LambdaGBs + c.LambdaReqs + c.API }

// cost prices the window: wru and rru are its units (see ScalePoint.WRU);
// Lambda time is that of the stream invocations started in it, the
// window's arrivals' share of the enqueue time, and one sweep's and one
// reap's share of a Schedule (their mean invocation).
func (r *scaleRun) cost(from, to time.Time, delivered int, wru, rru float64) Dollars {
	per := 1e6 / float64(delivered)
	var gbs, invs float64
	for _, in := range r.streamInv {
		if !in.start.Before(from) && in.start.Before(to) {
			gbs += gbSeconds(in.dur, drainerMB)
			invs++
		}
	}
	share := to.Sub(from).Seconds() / r.p.Schedule.Seconds()
	for _, set := range []struct {
		inv []invocation
		mb  int
	}{{r.sweepInv, drainerMB}, {r.reapInv, reaperMB}} {
		if len(set.inv) == 0 {
			continue
		}
		var g float64
		for _, in := range set.inv {
			g += gbSeconds(in.dur, set.mb)
		}
		gbs += g / float64(len(set.inv)) * share
		invs += share
	}
	// Enqueue time: the window's share of every enqueue's (the run's
	// enqueue time over its enqueue requests, per window arrival).
	enq := 0
	for _, rec := range r.recs {
		if !rec.start.Before(from) && rec.start.Before(to) {
			enq++
		}
	}
	if r.enqCalls > 0 {
		gbs += r.enqGBs / float64(r.enqCalls) * float64(enq)
	}
	invs += float64(enq)
	return Dollars{
		DynamoDB:   (wru*PriceWRU + rru*PriceRRU) * per,
		LambdaGBs:  gbs * PriceGBSecond * per,
		LambdaReqs: invs * PriceInvocation * per,
		API:        float64(enq) * PriceAPIRequest * per,
	}
}

// bottleneck names what limits a point first, from what it measured.
func bottleneck(pt ScalePoint) string {
	p := pt.Params
	growing := pt.BacklogGrowth > 0.05*p.Rate || pt.Undelivered > pt.Arrivals/100
	var why []string
	if pt.ThrottledBy["table"] > 0 {
		why = append(why, fmt.Sprintf("table quota (%.0f WRU/s) throttles", p.TableWRU))
	}
	if n := pt.ThrottledBy["P#"] + pt.ThrottledBy["D#"]; n > 0 {
		why = append(why, fmt.Sprintf("partition keys at %.0f WRU/s throttle (%d refusals)", p.KeyWRU, n))
	}
	if pt.IteratorAgeMax > 10*time.Second {
		why = append(why, fmt.Sprintf("stream batches wait (iterator age up to %s)", pt.IteratorAgeMax.Round(time.Second)))
	}
	if pt.SweepMax > p.Schedule {
		why = append(why, fmt.Sprintf("a sweep outlasts its %s schedule (%s)", p.Schedule, pt.SweepMax.Round(time.Second)))
	} else if pt.SweepUnfinished {
		why = append(why, fmt.Sprintf("a sweep still running at the run's end (%s so far)", pt.SweepMax.Round(time.Second)))
	}
	switch {
	case len(why) > 0 && growing:
		return "saturated: " + strings.Join(why, "; ")
	case len(why) > 0:
		return "keeps up; " + strings.Join(why, "; ")
	case growing:
		return "saturated: drain rate per partition (one drainer per partition at a time)"
	}
	return "keeps up"
}
