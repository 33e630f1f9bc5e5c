package cellhealth

import (
	"strings"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestJudgeCell(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	lease := func(renewed time.Duration) *coordinationv1.Lease {
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			RenewTime: &metav1.MicroTime{Time: now.Add(-renewed)}, LeaseDurationSeconds: ptr.To[int32](6),
		}}
	}
	cluster := func(ready metav1.ConditionStatus, since time.Duration) *clusterv1alpha1.Cluster {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cell-lhr"}}
		if ready != "" {
			c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: ready,
				Reason: "ClusterNotReachable", LastTransitionTime: metav1.NewTime(now.Add(-since))}}
		}
		return c
	}
	for name, tc := range map[string]struct {
		cluster         *clusterv1alpha1.Cluster
		lease           *coordinationv1.Lease
		wantUnreachable bool
		wantLastSeen    time.Time
		wantMessage     string
		wantExpiresIn   time.Duration
	}{
		"a fresh heartbeat and a Ready cluster: reachable until the lease runs out": {
			cluster: cluster(metav1.ConditionTrue, time.Hour), lease: lease(time.Second), wantExpiresIn: 5 * time.Second,
		},
		"no heartbeat at all is judged by Karmada alone": {
			cluster: cluster(metav1.ConditionTrue, time.Hour),
		},
		"a cluster Karmada has not judged yet is not unreachable": {
			cluster: cluster("", 0),
		},
		"an expired heartbeat: unreachable since the last renewal": {
			cluster: cluster(metav1.ConditionTrue, time.Hour), lease: lease(10 * time.Second),
			wantUnreachable: true, wantLastSeen: now.Add(-10 * time.Second), wantMessage: "no heartbeat from cell cell-lhr since 2026-11-24T11:59:50Z",
		},
		"Karmada's verdict with a fresh heartbeat: unreachable since Karmada lost it": {
			cluster: cluster(metav1.ConditionFalse, 4*time.Second), lease: lease(time.Second),
			wantUnreachable: true, wantLastSeen: now.Add(-4 * time.Second), wantMessage: "Karmada reports cluster cell-lhr not Ready since 2026-11-24T11:59:56Z",
			wantExpiresIn: 5 * time.Second,
		},
		"both: last seen at the renewal, both signals named": {
			cluster: cluster(metav1.ConditionFalse, 2*time.Second), lease: lease(8 * time.Second),
			wantUnreachable: true, wantLastSeen: now.Add(-8 * time.Second), wantMessage: "; Karmada reports it not Ready (ClusterNotReachable)",
		},
	} {
		t.Run(name, func(t *testing.T) {
			v := judgeCell(tc.cluster, tc.lease, now)
			if v.unreachable != tc.wantUnreachable || !v.lastSeen.Equal(tc.wantLastSeen) || v.expiresIn != tc.wantExpiresIn {
				t.Errorf("judgeCell = %+v, want unreachable=%t lastSeen=%s expiresIn=%s", v, tc.wantUnreachable, tc.wantLastSeen, tc.wantExpiresIn)
			}
			if !strings.Contains(v.message, tc.wantMessage) {
				t.Errorf("message %q does not say %q", v.message, tc.wantMessage)
			}
		})
	}
}

func TestCombineNamesEveryUnreachableCellAndTheEarliestLastSeen(t *testing.T) {
	early, late := time.Unix(100, 0), time.Unix(200, 0)
	h := combine([]cellVerdict{
		{name: "cell-b", unreachable: true, lastSeen: late, message: "b is quiet"},
		{name: "cell-c"},
		{name: "cell-a", unreachable: true, lastSeen: early, message: "a is quiet"},
	})
	if !h.Unreachable || !h.LastSeen.Equal(early) || h.Message != "a is quiet; b is quiet" {
		t.Errorf("combine = %+v", h)
	}
	if h := combine([]cellVerdict{{name: "cell-a"}}); h.Unreachable || !h.LastSeen.IsZero() || h.Message != "" {
		t.Errorf("a reachable city: %+v", h)
	}
}

func TestPublishCallsListenersOnlyOnChange(t *testing.T) {
	tr := &Tracker{}
	var calls []string
	tr.OnChange(func(city string) { calls = append(calls, city) })
	quiet := Health{Unreachable: true, LastSeen: time.Unix(100, 0), Message: "quiet"}
	tr.publish("LHR", Health{}) // first sight of a reachable city: no news
	tr.publish("LHR", quiet)
	tr.publish("LHR", quiet)
	tr.publish("LHR", Health{})
	if strings.Join(calls, ",") != "LHR,LHR" {
		t.Errorf("listeners called for %v, want twice (stale, then back)", calls)
	}
	if got := tr.City("DFW"); got.Unreachable {
		t.Errorf("a city never seen is reported unreachable: %+v", got)
	}
}

func TestPublishExportsEachCityVerdict(t *testing.T) {
	tr := &Tracker{}
	tr.publish("AMS", Health{})
	if v := testutil.ToFloat64(reachable.WithLabelValues("AMS")); v != 1 {
		t.Errorf("%s{city=AMS} = %v for a reachable city, want 1", ReachableMetric, v)
	}
	tr.publish("AMS", Health{Unreachable: true, LastSeen: time.Unix(100, 0), Message: "quiet"})
	if v := testutil.ToFloat64(reachable.WithLabelValues("AMS")); v != 0 {
		t.Errorf("%s{city=AMS} = %v for an unreachable city, want 0", ReachableMetric, v)
	}
	forgetCity("AMS")
	if reachable.DeleteLabelValues("AMS") {
		t.Errorf("a city without cells keeps its %s series", ReachableMetric)
	}
}
