//go:build bench

package federation

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/federation"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/bench/internal/procstat"
)

// floorNamespace is the hub namespace of the engine floor's objects.
const floorNamespace = "bench-floor"

// floor is what the engine floor measured.
type floor struct {
	objects       int
	took          time.Duration
	before, after sample
	load          string
}

// engineFloor is Karmada alone at P4's size, on the same platform after P4
// and P5: compute's processes (every compute-manager and compute-quota)
// are stopped, then n × 3 WorkloadDeployments (P4's hub copies: the same
// template, 2 replicas, one city each) are created in a hub namespace of
// their own, 8 at a time, with compute's PropagationPolicy per city
// (federation.CityPolicy) and compute's ResourceInterpreterCustomization
// (installed by the platform). In each cell the benchmark writes every
// WorkloadDeployment's status once when it arrives, as a provider that
// brings its replicas up at once would (2 ready, Available); the clock
// stops when a watch of the hub has seen every object's status reflected
// (2 ready, Available). Writes are counted as P4's, until the planes have
// been quiet for 2 s.
//
// It runs after P5 so that no compute process ever sees its objects; the
// hub and cells then also hold P4's objects (their etcd and watch caches
// are larger than on an empty platform, which makes the floor, if
// anything, slower).
func engineFloor(b *testing.B, ctx context.Context, p *platform.Platform, e *env, m *meters, n int) floor {
	b.Helper()
	for _, c := range p.State().Components {
		if strings.HasPrefix(c.Name, "compute-") {
			must(b, p.StopComponent(c.Name, platform.StopOptions{}))
			// compute-local stops only the processes it recognizes as
			// its own (by their binary): a compute process still running
			// would write the floor's statuses and hold it up forever.
			if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c.PID)); err == nil && bytes.Contains(cmdline, []byte("compute-")) {
				b.Fatalf("engine floor: %s (pid %d) still runs after it was stopped: is COMPUTE_BENCH_MANAGER_BINARY a wrapper that runs another binary? Make it run compute-manager under its own name (exec -a)", c.Name, c.PID)
			}
		}
	}
	must(b, e.hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: floorNamespace}}))
	policies := map[string]*policyv1alpha1.PropagationPolicy{}
	for _, city := range benchCities {
		policies[city] = federation.CityPolicy(floorNamespace, city)
		must(b, e.hub.Create(ctx, policies[city]))
	}

	s := &scaleWatch{changed: make(chan struct{}, 1)}
	reflected := map[string]bool{}
	follow(ctx, b, e.hub, &computev1alpha.WorkloadDeploymentList{}, floorNamespace, func(obj client.Object, deleted bool) {
		wd := obj.(*computev1alpha.WorkloadDeployment)
		reflected[wd.Name] = !deleted && wd.Status.ReadyReplicas == replicasPerCity &&
			meta.IsStatusConditionTrue(wd.Status.Conditions, computev1alpha.ConditionAvailable)
	}, s)
	// The cells' "provider": one status write per WorkloadDeployment.
	for _, c := range e.cells {
		statusOnArrival(ctx, b, c, &computev1alpha.WorkloadDeploymentList{}, floorNamespace, s, func(obj client.Object) []byte {
			return floorStatus(obj.GetGeneration())
		})
	}

	f := floor{objects: n * len(benchCities), load: procstat.LoadAverage()}
	f.before = m.snapshot(ctx)
	began := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range n {
		for _, city := range benchCities {
			wd := floorDeployment(fmt.Sprintf("floor-%d-%s", i, strings.ToLower(city)), city, policies[city])
			g.Go(func() error { return e.hub.Create(gctx, wd) })
		}
	}
	must(b, g.Wait())
	timeout := max(10*time.Minute, time.Duration(n)*3*time.Second)
	if !s.waitFor(timeout, func() bool {
		c := 0
		for _, ok := range reflected {
			if ok {
				c++
			}
		}
		return c == f.objects
	}) {
		b.Fatalf("engine floor: not every hub WorkloadDeployment showed its cell's status within %s", timeout)
	}
	f.took = time.Since(began)
	m.quiet(ctx, 2*time.Second, 2*time.Minute)
	f.after = m.snapshot(ctx)
	f.load += ", after " + procstat.LoadAverage()
	return f
}

// floorDeployment is one of the engine floor's hub objects: a hub copy of
// P4's shape, created claimed by its city's policy as compute creates its
// copies (federation.ClaimedBy).
func floorDeployment(name, city string, policy *policyv1alpha1.PropagationPolicy) *computev1alpha.WorkloadDeployment {
	w := (&env{}).workload(name)
	wd := &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: floorNamespace, Name: name,
			Labels: map[string]string{computev1alpha.CityCodeTopologyLabel: city},
		},
		Spec: computev1alpha.WorkloadDeploymentSpec{
			WorkloadRef:   computev1alpha.WorkloadReference{Name: name, UID: types.UID("floor-" + name)},
			PlacementName: w.Spec.Placements[0].Name,
			CityCode:      city,
			Template:      w.Spec.Template,
			ScaleSettings: w.Spec.Placements[0].ScaleSettings,
		},
	}
	federation.ClaimedBy(wd, policy)
	return wd
}

// floorStatus is the status a provider writes once a cell
// WorkloadDeployment's replicas are all up.
func floorStatus(generation int64) []byte {
	now := time.Now().UTC().Format(time.RFC3339)
	return fmt.Appendf(nil, `{"status":{"observedGeneration":%d,"replicas":%d,"currentReplicas":%d,"updatedReplicas":%d,"readyReplicas":%d,"desiredReplicas":%d,`+
		`"conditions":[{"type":%q,"status":"True","reason":"MinimumReplicasAvailable","message":"all replicas are ready","lastTransitionTime":%q,"observedGeneration":%d}]}}`,
		generation, replicasPerCity, replicasPerCity, replicasPerCity, replicasPerCity, replicasPerCity,
		computev1alpha.ConditionAvailable, now, generation)
}

// printFloor prints the engine floor and P4's ratios to it: time, writes
// per WorkloadDeployment on every plane, CPU seconds per kind of process.
func (m *meters) printFloor(f floor, p4 time.Duration, p4Before, p4After sample) {
	report("engine floor conditions: Karmada alone (compute's processes stopped), %d WorkloadDeployments (P4's hub copies, created claimed by their policy as compute's are) through compute's interpreter and per-city PropagationPolicies, one status write each in its cell by the benchmark; the same platform after P4 and P5; load average before %s",
		f.objects, f.load)
	report("engine floor: every hub object shows its cell's status in %s (%.1f objects/s); P4 / floor: %.2fx",
		f.took.Round(time.Millisecond), float64(f.objects)/f.took.Seconds(), p4.Seconds()/f.took.Seconds())
	m.printWrites("engine floor", f.before, f.after, f.objects, "WorkloadDeployment")
	floorWrites, p4Writes := planeWrites(f.before, f.after), planeWrites(p4Before, p4After)
	var ratios []string
	for _, pl := range m.planes {
		fw, pw := floorWrites[pl]/float64(f.objects), p4Writes[pl]/float64(f.objects)
		if fw == 0 {
			ratios = append(ratios, fmt.Sprintf("%s %.2f vs 0", pl, pw))
			continue
		}
		ratios = append(ratios, fmt.Sprintf("%s %.2f vs %.2f (%.2fx)", pl, pw, fw, pw/fw))
	}
	report("P4 / floor, writes per WorkloadDeployment: %s", strings.Join(ratios, "; "))
	report("P4 / floor, writes all planes: %.2f vs %.2f per WorkloadDeployment (%.2fx)",
		(p4After.totalWrites()-p4Before.totalWrites())/float64(f.objects), (f.after.totalWrites()-f.before.totalWrites())/float64(f.objects),
		(p4After.totalWrites()-p4Before.totalWrites())/(f.after.totalWrites()-f.before.totalWrites()))
	floorCPU, p4CPU := processCPU(f.before, f.after), processCPU(p4Before, p4After)
	var cpu []string
	for _, kind := range []string{"kube-apiserver", "etcd", "karmada", "compute", "kube-controller-manager"} {
		if floorCPU[kind] == 0 {
			cpu = append(cpu, fmt.Sprintf("%s %.1f s vs 0", kind, p4CPU[kind]))
			continue
		}
		cpu = append(cpu, fmt.Sprintf("%s %.1f s vs %.1f s (%.2fx)", kind, p4CPU[kind], floorCPU[kind], p4CPU[kind]/floorCPU[kind]))
	}
	report("P4 / floor, CPU seconds: %s", strings.Join(cpu, "; "))
}

// planeWrites sums every plane's writes between two samples.
func planeWrites(before, after sample) map[string]float64 {
	out := map[string]float64{}
	for pl, w := range after.writes {
		for k, v := range w {
			out[pl] += v - before.writes[pl][k]
		}
	}
	return out
}

// processCPU sums the CPU seconds between two samples by kind of process:
// the part of its name before the plane ("kube-apiserver", "karmada",
// "compute", "etcd").
func processCPU(before, after sample) map[string]float64 {
	out := map[string]float64{}
	for name, t := range after.cpu {
		kind := name
		for _, k := range []string{"kube-apiserver", "kube-controller-manager", "karmada", "compute", "etcd"} {
			if strings.HasPrefix(name, k) {
				kind = k
				break
			}
		}
		out[kind] += (t - before.cpu[name]).Seconds()
	}
	return out
}
