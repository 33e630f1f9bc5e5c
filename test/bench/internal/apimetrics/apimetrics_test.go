package apimetrics

import (
	"math"
	"testing"
)

const body = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
apiserver_request_total{code="201",component="apiserver",dry_run="",group="compute.datumapis.com",resource="instances",scope="resource",subresource="",verb="POST",version="v1alpha"} 12
apiserver_request_total{code="200",component="apiserver",dry_run="",group="compute.datumapis.com",resource="instances",scope="resource",subresource="status",verb="APPLY",version="v1alpha"} 30
apiserver_request_total{code="409",component="apiserver",dry_run="",group="compute.datumapis.com",resource="instances",scope="resource",subresource="status",verb="APPLY",version="v1alpha"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 7
apiserver_request_total{code="201",component="apiserver",dry_run="",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1"} 99
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1",le="0.05"} 90
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1",le="+Inf"} 99
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="WATCH",version="v1",le="+Inf"} 4
broken{
`

func TestParseCountsWritesByVerbAndResourceAndLatencyButWatches(t *testing.T) {
	s := Parse([]byte(body))
	want := map[string]float64{
		"POST instances": 12, "APPLY instances/status": 32, "PUT leases": 7, "POST events": 5,
	}
	if len(s.Writes) != len(want) {
		t.Fatalf("writes = %v, want %v", s.Writes, want)
	}
	for k, v := range want {
		if s.Writes[k] != v {
			t.Errorf("writes[%q] = %v, want %v", k, s.Writes[k], v)
		}
	}
	if s.Latency[0.05] != 90 || s.Latency[math.Inf(1)] != 99 || len(s.Latency) != 2 {
		t.Errorf("latency = %v, want 0.05→90 and +Inf→99 (WATCH left out)", s.Latency)
	}
	if got := Sum(s.Writes, NotLeaseOrEvent); got != 44 {
		t.Errorf("writes but leases and events = %v, want 44", got)
	}
	if got := Sum(s.Writes, NotLease); got != 49 {
		t.Errorf("writes but leases = %v, want 49", got)
	}
	if got := Delta(map[string]float64{"a": 3, "b": 1}, map[string]float64{"a": 1, "b": 1}); len(got) != 1 || got["a"] != 2 {
		t.Errorf("delta = %v, want a→2", got)
	}
}
