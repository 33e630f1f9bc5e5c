//go:build e2e

package runtime

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/statusview"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/test/clitest"
	"github.com/citycells/compute/test/e2e/internal/fixture"
)

// Bounds of the waves rollout: DFW's wave soaks for wavesSoak once ready;
// a city not ready wavesDeadline after it got a revision halts the rollout;
// LHR is watched for holdFor while DFW's new instance is not ready.
const (
	wavesSoak     = 5
	wavesDeadline = 30
	holdFor       = 45 * time.Second
)

// TestReadinessThatFailsHaltsAWavesRollout is #41's "a readiness probe that
// fails keeps the Instance not Ready and halts a waves rollout", with the
// real kubelet deciding readiness: a Workload rolled in waves, DFW (the
// real node) then LHR, is Available in both; a template whose readiness
// probe asks a port nothing listens on reaches DFW only, where the new
// Instance runs but is not Ready, is named in the Workload's status, and
// holds the wave — LHR keeps its template, its revision and its very
// Instances, at every look for 45 s — until the progress deadline halts the
// rollout, as the CLI says; a fixed probe rolls through DFW and then LHR.
func TestReadinessThatFailsHaltsAWavesRollout(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	name, federation := fixture.ProjectNamespace(t, project, []string{city, simulatedCity})
	ns := projectNamespace{name: name, hub: federation}
	u := newCLIUser(t, ns.name)
	lhr, err := client.New(local.Config(platform.CellPlane(simulatedCity)), client.Options{Scheme: cell.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	w := clitest.NewWorkload("waves").Namespace(ns.name).Image(local.State().Registry+"/"+platform.DemoImage).
		Placement("default", 2, city, simulatedCity).Edit(func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].ReadinessProbe = readinessOn(intstr.FromString("http"), 1)
		w.Spec.Rollout = &computev1alpha.WorkloadRollout{
			Strategy:                computev1alpha.WavesCityRollout,
			Waves:                   []computev1alpha.RolloutWave{{CityCodes: []string{city}}, {CityCodes: []string{simulatedCity}}},
			SoakSeconds:             ptr.To(int32(wavesSoak)),
			ProgressDeadlineSeconds: ptr.To(int32(wavesDeadline)),
		}
	}).Build()
	g.Expect(project.Create(ctx, w)).To(Succeed())
	u.run(cmdutil.ExitOK, "rollout", "status", "waves", "--timeout", "3m", "-y")
	expectAvailable(t, ns.hub, "waves", 2)
	expectRolledOut(g, ns, "waves")
	kept := observeCity(g, lhr, ns, simulatedCity)
	t.Logf("LHR runs revision %s (template %s) with instances %v", kept.revision, kept.template, kept.uids)

	t.Log("--- a readiness probe on a port nothing listens on: DFW's new instance runs, not Ready, named in the status")
	changed := time.Now()
	g.Expect(patchWorkload(ctx, ns.name, "waves", func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].ReadinessProbe = readinessOn(intstr.FromInt32(9999), 1)
	})).To(Succeed())
	var stuck string
	g.Eventually(func(g Gomega) {
		stuck = unreadyNewInstance(g, ns)
		dfw := workloadCity(g, ns, "waves", city)
		g.Expect(dfw.NotReady).NotTo(BeNil(), "the Workload names no instance of DFW as not ready")
		g.Expect(dfw.NotReady.Instances).To(ContainElement(stuck))
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())
	t.Logf("DFW's new instance %s was running and not Ready, and named in the Workload's status, %s after the change (load %s)",
		stuck, time.Since(changed).Round(100*time.Millisecond), loadAvg())

	t.Logf("--- LHR keeps its template, revision and instances at every look for %s; the rollout waits, then halts", holdFor)
	halted := holdsTheWave(t, u, lhr, ns, kept, changed)
	if halted == 0 {
		// The hold is an observation window, not a bound on the halt: a
		// loaded machine may reach the progress deadline later.
		g.Eventually(func(g Gomega) string {
			for _, c := range cliStatus(g, u, "waves").Cities {
				if c.City == city {
					return c.Rollout
				}
			}
			return ""
		}).WithTimeout(wait).WithPolling(2*time.Second).Should(Equal(string(computev1alpha.CityHalted)), "DFW's wave never halted")
		halted = time.Since(changed)
	}
	t.Logf("the rollout halted %s after the change (progress deadline %ds; load %s)", halted.Round(100*time.Millisecond), wavesDeadline, loadAvg())
	res := u.run(cmdutil.ExitFailure, "rollout", "status", "waves", "--watch=false", "-y")
	g.Expect(res.Stderr).To(And(ContainSubstring("halted in default/"+city), ContainSubstring(computev1alpha.ReasonProgressDeadlineExceeded)))
	prog := expectWorkloadCondition(g, ns.name, "waves", computev1alpha.ConditionProgressing, metav1.ConditionFalse)
	g.Expect(prog.Reason).To(Equal(computev1alpha.ReasonRolloutHalted))

	t.Log("--- a probe that passes: DFW, then LHR, and the rollout completes")
	fixed := time.Now()
	g.Expect(patchWorkload(ctx, ns.name, "waves", func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].ReadinessProbe = readinessOn(intstr.FromString("http"), 2)
	})).To(Succeed())
	u.run(cmdutil.ExitOK, "rollout", "status", "waves", "--timeout", "3m", "-y")
	t.Logf("the fixed template rolled out in both cities %s after the fix (soak %ds; load %s)",
		time.Since(fixed).Round(100*time.Millisecond), wavesSoak, loadAvg())
	target := expectRolledOut(g, ns, "waves")
	for _, pod := range expectAvailable(t, ns.hub, "waves", 2) {
		g.Expect(pod.Spec.Containers[0].ReadinessProbe.PeriodSeconds).To(Equal(int32(2)), "Pod %s runs an older template", pod.Name)
	}
	now := observeCity(g, lhr, ns, simulatedCity)
	g.Expect(now.revision).To(Equal(target), "LHR's deployment is not at the fixed revision")
	g.Expect(now.template).NotTo(Equal(kept.template))
	for uid := range now.uids {
		g.Expect(kept.uids).NotTo(HaveKey(uid), "LHR's instance %s was not replaced by the fixed template", uid)
	}
	u.run(cmdutil.ExitOK, "destroy", "waves", "-y", "--wait", "--timeout", "3m")
}

// readinessOn is an HTTP readiness probe of /healthz on port, every period
// seconds.
func readinessOn(port intstr.IntOrString, period int32) *computev1alpha.Probe {
	return &computev1alpha.Probe{HTTPGet: &computev1alpha.HTTPGetProbe{Path: "/healthz", Port: port}, PeriodSeconds: period, FailureThreshold: 1}
}

// holdsTheWave checks, every 2 s for holdFor, that LHR keeps the template,
// revision and Instances it had (kept), that DFW's instances of the new
// template stay not Available while an old one serves, and that `status -o
// json` shows LHR waiting and DFW updating, then halted. It returns how long
// after changed (the template change) the rollout was first seen halted;
// zero when it was not.
func holdsTheWave(t *testing.T, u *cliUser, lhr client.Client, ns projectNamespace, kept cityState, changed time.Time) time.Duration {
	t.Helper()
	g := NewWithT(t)
	began := time.Now()
	var halted time.Duration
	looks := 0
	for ; time.Since(began) < holdFor; looks++ {
		now := observeCity(g, lhr, ns, simulatedCity)
		g.Expect(now).To(Equal(kept), "LHR changed while DFW's wave was not ready (look %d, %s in)", looks, time.Since(began).Round(time.Second))
		serving, unready := 0, 0
		for _, inst := range workloadInstances(g, ns.hub, "waves") {
			switch {
			case probePort(&inst) == 9999 && available(&inst):
				t.Fatalf("Instance %s became Available although its readiness probe fails", inst.Name)
			case probePort(&inst) == 9999:
				unready++
			case available(&inst):
				serving++
			}
		}
		g.Expect(unready).To(BeNumerically(">=", 1), "DFW has no instance of the new template")
		g.Expect(serving).To(BeNumerically(">=", 1), "no old instance of DFW serves while the new one is not ready")

		v := cliStatus(g, u, "waves")
		byCity, messages := map[string]string{}, map[string]string{}
		for _, c := range v.Cities {
			byCity[c.City], messages[c.City] = c.Rollout, c.Message
		}
		g.Expect(byCity[simulatedCity]).To(Equal(string(computev1alpha.CityWaiting)), "status -o json: LHR's rollout state")
		g.Expect(byCity[city]).To(BeElementOf(string(computev1alpha.CityUpdating), string(computev1alpha.CityHalted)), "status -o json: DFW's rollout state")
		if byCity[city] == string(computev1alpha.CityHalted) && halted == 0 {
			halted = time.Since(changed)
			t.Logf("status -o json shows DFW halted (%q) and LHR waiting (%q) %s after the change",
				messages[city], messages[simulatedCity], halted.Round(100*time.Millisecond))
		}
		time.Sleep(2 * time.Second)
	}
	t.Logf("LHR was unchanged at each of %d looks over %s", looks, time.Since(began).Round(time.Second))
	return halted
}

// cityState is what a city of a Workload runs: its project
// WorkloadDeployment's revision and template hash (the same as its cell
// copy's) and the uids of its Instances in the cell.
type cityState struct {
	revision, template string
	uids               map[string]bool
}

// observeCity reads the city's state of the Workload "waves" in ns from the
// project and from the city's cell (c).
func observeCity(g Gomega, c client.Client, ns projectNamespace, code string) cityState {
	list := &computev1alpha.WorkloadDeploymentList{}
	g.Expect(project.List(context.Background(), list, client.InNamespace(ns.name))).To(Succeed())
	i := slices.IndexFunc(list.Items, func(wd computev1alpha.WorkloadDeployment) bool { return wd.Spec.CityCode == code })
	g.Expect(i).To(BeNumerically(">=", 0), "no WorkloadDeployment of %s in the project", code)
	wd := &list.Items[i]
	out := cityState{revision: wd.Annotations[computev1alpha.RevisionHashAnnotation], template: names.TemplateHash(&wd.Spec.Template), uids: map[string]bool{}}
	cellWD := &computev1alpha.WorkloadDeployment{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns.hub, Name: wd.Name}, cellWD)).To(Succeed())
	g.Expect(names.TemplateHash(&cellWD.Spec.Template)).To(Equal(out.template), "the cell's copy of %s runs another template", wd.Name)
	insts := &computev1alpha.InstanceList{}
	g.Expect(c.List(context.Background(), insts, client.InNamespace(ns.hub), client.MatchingLabels{computev1alpha.WorkloadNameLabel: "waves"})).To(Succeed())
	for _, inst := range insts.Items {
		out.uids[string(inst.UID)] = true
	}
	return out
}

// expectRolledOut waits for the Workload's rollout to be complete with
// every city at its target and Available, and returns the target's
// template hash.
func expectRolledOut(g Gomega, ns projectNamespace, workload string) string {
	var target string
	g.Eventually(func(g Gomega) {
		w := &computev1alpha.Workload{}
		g.Expect(project.Get(context.Background(), client.ObjectKey{Namespace: ns.name, Name: workload}, w)).To(Succeed())
		g.Expect(w.Status.Rollout).NotTo(BeNil())
		g.Expect(w.Status.Rollout.Phase).To(Equal(computev1alpha.RolloutPhaseComplete))
		target = w.Status.Rollout.TemplateHash
		for _, c := range w.Status.Rollout.Cities {
			g.Expect(c.TemplateHash).To(Equal(target), "%s runs another revision", c.CityCode)
		}
		for _, code := range []string{city, simulatedCity} {
			g.Expect(workloadCity(g, ns, workload, code).Available).To(BeTrue(), "%s is not Available", code)
		}
		g.Expect(meta.IsStatusConditionTrue(w.Status.Conditions, computev1alpha.ConditionAvailable)).To(BeTrue())
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())
	return target
}

// workloadCity is the Workload's status of a city of its only placement.
func workloadCity(g Gomega, ns projectNamespace, workload, code string) computev1alpha.WorkloadCityStatus {
	w := &computev1alpha.Workload{}
	g.Expect(project.Get(context.Background(), client.ObjectKey{Namespace: ns.name, Name: workload}, w)).To(Succeed())
	g.Expect(w.Status.Placements).To(HaveLen(1))
	cities := w.Status.Placements[0].Cities
	i := slices.IndexFunc(cities, func(c computev1alpha.WorkloadCityStatus) bool { return c.CityCode == code })
	g.Expect(i).To(BeNumerically(">=", 0), "the Workload's status has no city %s", code)
	return cities[i]
}

// unreadyNewInstance returns the DFW Instance of the template with the
// failing probe, once its Pod runs and it is not Available.
func unreadyNewInstance(g Gomega, ns projectNamespace) string {
	for _, inst := range workloadInstances(g, ns.hub, "waves") {
		if probePort(&inst) != 9999 {
			continue
		}
		pod := &corev1.Pod{}
		g.Expect(cell.Get(context.Background(), client.ObjectKeyFromObject(&inst), pod)).To(Succeed())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning), "Pod %s", pod.Name)
		g.Expect(available(&inst)).To(BeFalse(), "Instance %s is Available although its readiness probe fails", inst.Name)
		return inst.Name
	}
	g.Expect("").NotTo(BeEmpty(), "DFW has no instance of the new template yet")
	return ""
}

// probePort is the port of an Instance's readiness probe; 0 when none.
func probePort(inst *computev1alpha.Instance) int32 {
	s := inst.Spec.Runtime.Sandbox
	if s == nil || len(s.Containers) == 0 || s.Containers[0].ReadinessProbe == nil || s.Containers[0].ReadinessProbe.HTTPGet == nil {
		return 0
	}
	return s.Containers[0].ReadinessProbe.HTTPGet.Port.IntVal
}

// cliStatus is `datumctl-compute status WORKLOAD -o json`, parsed.
func cliStatus(g Gomega, u *cliUser, workload string) *statusview.View {
	res := u.exec("status", workload, "-o", "json")
	g.Expect(res.Code).To(Equal(cmdutil.ExitOK), "status -o json: %s", res.Stderr)
	v := &statusview.View{}
	g.Expect(json.Unmarshal([]byte(res.Stdout), v)).To(Succeed())
	return v
}
