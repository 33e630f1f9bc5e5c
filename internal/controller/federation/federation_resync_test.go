package federation

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// makeHubCopy builds a hub copy at generation whose status observed
// observed, with a condition when reported.
func makeHubCopy(generation, observed int64, reported bool) *computev1alpha.WorkloadDeployment {
	wd := &computev1alpha.WorkloadDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web-lhr", UID: "u1", Generation: generation}}
	wd.Status.ObservedGeneration = observed
	if reported {
		wd.Status.Conditions = []metav1.Condition{{Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionTrue}}
	}
	return wd
}

func TestStatusLags(t *testing.T) {
	deleting := makeHubCopy(2, 1, true)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	tests := map[string]struct {
		hubCopy *computev1alpha.WorkloadDeployment
		want    bool
	}{
		"a copy whose generation is observed and reported does not lag": {makeHubCopy(2, 2, true), false},
		"a copy whose generation is not observed yet lags":              {makeHubCopy(2, 1, true), true},
		"a copy no cell condition was ever collected for lags":          {makeHubCopy(2, 2, false), true},
		"no copy does not lag":                               {nil, false},
		"a copy being deleted does not lag":                  {deleting, false},
		"a copy not written yet (generation 0) does not lag": {makeHubCopy(0, 0, false), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := StatusLags(tc.hubCopy); got != tc.want {
				t.Errorf("StatusLags = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestResyncDue(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	const after = 20 * time.Second
	tests := map[string]struct {
		lagSince, lastAsked time.Time
		wantDue             bool
		wantWait            time.Duration
	}{
		"a lag shorter than the threshold waits for the rest of it": {
			lagSince: ago(5 * time.Second), wantWait: 15 * time.Second,
		},
		"a lag past the threshold never asked for is asked for now": {
			lagSince: ago(25 * time.Second), wantDue: true, wantWait: after,
		},
		"a lag asked for moments ago waits for the interval": {
			lagSince: ago(40 * time.Second), lastAsked: ago(10 * time.Second), wantWait: after - 10*time.Second,
		},
		"a lag asked for an interval (half the lag) ago is asked for again": {
			lagSince: ago(50 * time.Second), lastAsked: ago(25 * time.Second), wantDue: true, wantWait: 25 * time.Second,
		},
		"a long lag is asked for less often": {
			lagSince: ago(4 * time.Minute), lastAsked: ago(time.Minute), wantWait: time.Minute,
		},
		"the interval is bounded": {
			lagSince: ago(time.Hour), lastAsked: ago(maxResyncInterval), wantDue: true, wantWait: maxResyncInterval,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			due, wait := ResyncDue(tc.lagSince, tc.lastAsked, now, after)
			if due != tc.wantDue || wait != tc.wantWait {
				t.Errorf("ResyncDue = (%v, %v), want (%v, %v)", due, wait, tc.wantDue, tc.wantWait)
			}
		})
	}
}

func TestLagTrackerCountsFromTheFirstLagOfAGeneration(t *testing.T) {
	var tr lagTracker
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	if since, lags := tr.observe(makeHubCopy(2, 1, true), t0); !lags || !since.Equal(t0) {
		t.Fatalf("first lag: (%v, %v), want (%v, true)", since, lags, t0)
	}
	if since, _ := tr.observe(makeHubCopy(2, 1, true), t0.Add(time.Minute)); !since.Equal(t0) {
		t.Errorf("the same generation still lagging counts from %v, want %v", since, t0)
	}
	if since, _ := tr.observe(makeHubCopy(3, 1, true), t0.Add(2*time.Minute)); !since.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("a new generation counts from %v, want its first lag", since)
	}
	if _, lags := tr.observe(makeHubCopy(3, 3, true), t0.Add(3*time.Minute)); lags || len(tr.since) != 0 {
		t.Errorf("a caught-up copy is still tracked: lags %v, %d kept", lags, len(tr.since))
	}
	if _, lags := tr.observe(makeHubCopy(4, 3, true), t0.Add(4*time.Minute)); !lags {
		t.Fatal("a new generation behind does not lag")
	}
	tr.forget("u1")
	if len(tr.since) != 0 {
		t.Errorf("a forgotten copy is still tracked")
	}
}
