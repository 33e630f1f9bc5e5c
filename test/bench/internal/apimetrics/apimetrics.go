// Package apimetrics reads what an apiserver says about the requests it
// served (its /metrics endpoint): the writes it counted, by verb and
// resource, and its request latency histogram. The benchmarks count API
// writes with it, so a figure is the apiserver's own count, never the
// client's idea of what it sent.
package apimetrics

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// Sample is one reading of an apiserver's counters.
type Sample struct {
	// Writes counts the write requests served, by "VERB resource" or
	// "VERB resource/subresource".
	Writes map[string]float64
	// Latency is the request latency histogram of everything but WATCH and
	// CONNECT: bucket upper bound (seconds, +Inf included) → cumulative
	// count.
	Latency map[float64]float64
}

// writeVerbs are the apiserver_request_total verbs that write.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

var labelPattern = regexp.MustCompile(`(\w+)="([^"]*)"`)

// Read scrapes an apiserver's /metrics through c (a REST client of that
// apiserver).
func Read(ctx context.Context, c rest.Interface) (Sample, error) {
	body, err := c.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return Sample{}, fmt.Errorf("failed to read the apiserver's metrics: %w", err)
	}
	return Parse(body), nil
}

// Parse reads the write counters and latency buckets of a /metrics body.
func Parse(body []byte) Sample {
	s := Sample{Writes: map[string]float64{}, Latency: map[float64]float64{}}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		total := strings.HasPrefix(line, "apiserver_request_total{")
		bucket := strings.HasPrefix(line, "apiserver_request_duration_seconds_bucket{")
		end := strings.LastIndexByte(line, '}')
		if !total && !bucket || end < 0 {
			continue
		}
		labels := map[string]string{}
		for _, m := range labelPattern.FindAllStringSubmatch(line[:end], -1) {
			labels[m[1]] = m[2]
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			continue
		}
		switch {
		case total && writeVerbs[labels["verb"]]:
			key := labels["verb"] + " " + labels["resource"]
			if labels["subresource"] != "" {
				key += "/" + labels["subresource"]
			}
			s.Writes[key] += v
		case bucket && labels["verb"] != "WATCH" && labels["verb"] != "CONNECT":
			le, err := strconv.ParseFloat(labels["le"], 64)
			if labels["le"] == "+Inf" {
				le, err = math.Inf(1), nil
			}
			if err == nil {
				s.Latency[le] += v
			}
		}
	}
	return s
}

// Delta is after minus before, per key; keys that did not move are left
// out.
func Delta(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Sum adds up the counts whose key keep accepts (all of them when keep is
// nil).
func Sum(w map[string]float64, keep func(key string) bool) float64 {
	t := 0.0
	for k, v := range w {
		if keep == nil || keep(k) {
			t += v
		}
	}
	return t
}

// NotLease keeps every write but lease renewals, which never stop.
func NotLease(key string) bool { return Resource(key) != "leases" }

// NotLeaseOrEvent keeps every write but lease renewals and events.
func NotLeaseOrEvent(key string) bool {
	r := Resource(key)
	return r != "leases" && r != "events"
}

// Resource is the resource of a write key, without its verb and
// subresource.
func Resource(key string) string {
	_, r, _ := strings.Cut(key, " ")
	r, _, _ = strings.Cut(r, "/")
	return r
}
