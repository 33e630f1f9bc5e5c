package events

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

func TestTheWorkloadsEventsOnlyOldestFirstAndEachOnce(t *testing.T) {
	at := func(min int) metav1.Time { return metav1.NewTime(time.Date(2026, 12, 1, 10, min, 0, 0, time.UTC)) }
	ev := func(name, kind, regards string, labels map[string]string, typ string, last int) corev1.Event {
		return corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: regards}, Type: typ, LastTimestamp: at(last)}
	}
	dfw := map[string]string{computev1alpha.WorkloadNameLabel: "web", computev1alpha.CityCodeLabel: "DFW"}
	lhr := map[string]string{computev1alpha.WorkloadNameLabel: "web", computev1alpha.CityCodeLabel: "LHR"}
	summary := map[string]string{computev1alpha.WorkloadNameLabel: "web", computev1alpha.EventSummaryOfLabel: "web-dfw-0"}
	all := []corev1.Event{
		ev("pulled", computev1alpha.InstanceKind, "web-dfw-0", dfw, corev1.EventTypeNormal, 3),
		ev("oom", computev1alpha.InstanceKind, "web-dfw-0", dfw, corev1.EventTypeWarning, 5),
		ev("web.oom", computev1alpha.WorkloadKind, "web", summary, corev1.EventTypeWarning, 5),
		ev("lhr", computev1alpha.InstanceKind, "web-lhr-0", lhr, corev1.EventTypeWarning, 4),
		ev("rollout", computev1alpha.WorkloadKind, "web", nil, corev1.EventTypeNormal, 1),
		ev("deployment", computev1alpha.WorkloadDeploymentKind, "web-edge-dfw", nil, corev1.EventTypeNormal, 2),
		ev("other", computev1alpha.InstanceKind, "web-api-dfw-0", map[string]string{computev1alpha.WorkloadNameLabel: "web-api"}, corev1.EventTypeWarning, 2),
		ev("other-workload", computev1alpha.WorkloadKind, "web-api", nil, corev1.EventTypeWarning, 2),
	}
	regarding := map[corev1.ObjectReference]bool{
		{Kind: computev1alpha.WorkloadKind, Name: "web"}:                    true,
		{Kind: computev1alpha.WorkloadDeploymentKind, Name: "web-edge-dfw"}: true,
	}
	for _, tc := range []struct {
		name  string
		opts  Options
		names []string
	}{
		{"all of web", Options{Workload: "web"}, []string{"rollout", "deployment", "pulled", "lhr", "oom"}},
		{"warnings", Options{Workload: "web", Types: []string{corev1.EventTypeWarning}}, []string{"lhr", "oom"}},
		{"in DFW", Options{Workload: "web", CityFlag: cmdutil.CityFlag{City: "DFW"}}, []string{"pulled", "oom"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.regarding = regarding
			var got []string
			for _, e := range o.filter(all) {
				got = append(got, e.Name)
			}
			if len(got) != len(tc.names) {
				t.Fatalf("events %v, want %v", got, tc.names)
			}
			for i := range got {
				if got[i] != tc.names[i] {
					t.Fatalf("events %v, want %v", got, tc.names)
				}
			}
		})
	}
}
