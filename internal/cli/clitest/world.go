package clitest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/placement"
	"github.com/citycells/compute/internal/revision"
)

// State is the state an Instance is written in, as the cell and the
// runtime provider would leave it.
type State string

// Instance states users meet.
const (
	Available        State = "Available"
	Provisioning     State = "Provisioning"
	PendingQuota     State = "PendingQuota"
	QuotaExceeded    State = "QuotaExceeded"
	ImageUnavailable State = "ImageUnavailable"
	Crashing         State = "InstanceCrashing"
	ConfigError      State = "ConfigurationError"
)

// World says what state the instances of each city are in: city code →
// the state of each ordinal (the last state repeats). A city that is not
// listed is Available.
type World map[string][]State

// stateOf returns the state of ordinal i in city.
func (w World) stateOf(city string, i int) State {
	s := w[city]
	switch {
	case len(s) == 0:
		return Available
	case i < len(s):
		return s[i]
	}
	return s[len(s)-1]
}

// CreateWorkload creates w in the harness namespace and returns it as
// stored.
func (h *Harness) CreateWorkload(w *computev1alpha.Workload) *computev1alpha.Workload {
	h.T.Helper()
	w = w.DeepCopy()
	w.Namespace = h.Namespace
	if err := h.Client.Create(context.Background(), w); err != nil {
		h.T.Fatalf("create workload %s: %v", w.Name, err)
	}
	return w
}

// Converge does what the controllers would do for workload name: records
// its revision, creates or updates a WorkloadDeployment per placement ×
// city (deleting the others), creates its Instances in the states world
// gives (replacing instances of an older template), and writes every
// status. It returns the workload as converged.
func (h *Harness) Converge(name string, world World) *computev1alpha.Workload {
	h.T.Helper()
	w, err := Converge(context.Background(), h.Client, h.Namespace, name, world)
	if err != nil {
		h.T.Fatalf("converge %s: %v", name, err)
	}
	return w
}

// Converge is Harness.Converge without a test, for background loops.
func Converge(ctx context.Context, c client.Client, ns, name string, world World) (*computev1alpha.Workload, error) {
	var w computev1alpha.Workload
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &w); err != nil {
		return nil, err
	}
	current, err := recordRevision(ctx, c, &w)
	if err != nil {
		return nil, err
	}
	var existing computev1alpha.WorkloadDeploymentList
	if err := c.List(ctx, &existing, client.InNamespace(ns), client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(w.UID)}); err != nil {
		return nil, err
	}
	wanted := map[string]bool{}
	var wds []*computev1alpha.WorkloadDeployment
	for i := range w.Spec.Placements {
		p := &w.Spec.Placements[i]
		for _, city := range p.CityCodes {
			wd, err := ensureDeployment(ctx, c, &w, p, city)
			if err != nil {
				return nil, err
			}
			wanted[wd.Name] = true
			if err := ensureInstances(ctx, c, wd, world); err != nil {
				return nil, err
			}
			wds = append(wds, wd)
		}
	}
	for i := range existing.Items {
		if wd := &existing.Items[i]; !wanted[wd.Name] {
			if err := c.Delete(ctx, wd); err != nil && !apierrors.IsNotFound(err) {
				return nil, err
			}
			var insts computev1alpha.InstanceList
			if err := c.List(ctx, &insts, client.InNamespace(ns), client.MatchingLabels{computev1alpha.WorkloadDeploymentNameLabel: wd.Name}); err != nil {
				return nil, err
			}
			for j := range insts.Items {
				_ = c.Delete(ctx, &insts.Items[j])
			}
		}
	}
	if err := writeWorkloadStatus(ctx, c, &w, wds, current); err != nil {
		return nil, err
	}
	return &w, nil
}

// recordRevision applies the revision plan of the real revision package.
func recordRevision(ctx context.Context, c client.Client, w *computev1alpha.Workload) (revision.Current, error) {
	var list appsv1.ControllerRevisionList
	if err := c.List(ctx, &list, client.InNamespace(w.Namespace), client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(w.UID)}); err != nil {
		return revision.Current{}, err
	}
	plan, err := revision.Compute(w, revision.Owned(w, list.Items), time.Now())
	if err != nil {
		return revision.Current{}, err
	}
	if plan.Create != nil {
		if err := c.Create(ctx, plan.Create); err != nil {
			return revision.Current{}, err
		}
	}
	if plan.Renumber != nil {
		if err := c.Update(ctx, plan.Renumber); err != nil {
			return revision.Current{}, err
		}
	}
	for _, d := range plan.Delete {
		if err := c.Delete(ctx, d); err != nil && !apierrors.IsNotFound(err) {
			return revision.Current{}, err
		}
	}
	return plan.Current, nil
}

// ensureDeployment creates or updates the deployment of placement p in
// city, keeping spec.replicas, and returns it.
func ensureDeployment(ctx context.Context, c client.Client, w *computev1alpha.Workload, p *computev1alpha.WorkloadPlacement, city string) (*computev1alpha.WorkloadDeployment, error) {
	desired := placement.Desired(w, p, city, names.WorkloadDeploymentName(w.Name, w.UID, p.Name, city))
	var existing computev1alpha.WorkloadDeployment
	err := c.Get(ctx, client.ObjectKeyFromObject(desired), &existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := c.Create(ctx, desired); err != nil {
			return nil, err
		}
		return desired, nil
	case err != nil:
		return nil, err
	}
	merged, changed := placement.Merge(&existing, desired)
	if changed {
		if err := c.Update(ctx, merged); err != nil {
			return nil, err
		}
	}
	return merged, nil
}

// ensureInstances makes the instances of wd match its desired replicas in
// the states world gives, and writes wd's status.
func ensureInstances(ctx context.Context, c client.Client, wd *computev1alpha.WorkloadDeployment, world World) error {
	want := int(wd.Spec.ScaleSettings.MinReplicas)
	if wd.Spec.Replicas != nil {
		want = int(*wd.Spec.Replicas)
	}
	hash := names.TemplateHash(&wd.Spec.Template)
	var list computev1alpha.InstanceList
	if err := c.List(ctx, &list, client.InNamespace(wd.Namespace), client.MatchingLabels{computev1alpha.WorkloadDeploymentNameLabel: wd.Name}); err != nil {
		return err
	}
	have := map[string]*computev1alpha.Instance{}
	for i := range list.Items {
		have[list.Items[i].Name] = &list.Items[i]
	}
	var counts computev1alpha.ReplicaCounts
	var worst string
	for i := range want {
		state := world.stateOf(wd.Spec.CityCode, i)
		inst, err := ensureInstance(ctx, c, wd, i, hash, state, have[names.InstanceName(wd.Name, i)])
		if err != nil {
			return err
		}
		delete(have, inst.Name)
		counts.Replicas++
		counts.UpdatedReplicas++
		if state == Available {
			counts.ReadyReplicas++
			counts.CurrentReplicas++
		} else if worst == "" {
			worst = string(state)
		}
	}
	for _, extra := range have {
		if err := c.Delete(ctx, extra); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	counts.DesiredReplicas = int32(want)
	if err := c.Get(ctx, client.ObjectKeyFromObject(wd), wd); err != nil {
		return err
	}
	wd.Status.ObservedGeneration = wd.Generation
	wd.Status.ReplicaCounts = counts
	wd.Status.TemplateHash = hash
	avail := metav1.Condition{Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonReplicasAvailable, Message: "replicas are ready"}
	if counts.ReadyReplicas == 0 && want > 0 {
		avail.Status, avail.Reason, avail.Message = metav1.ConditionFalse, reasonOf(worst), "no replica is ready"
	}
	meta.SetStatusCondition(&wd.Status.Conditions, avail)
	return c.Status().Update(ctx, wd)
}

// reasonOf is the Ready reason an instance state reports.
func reasonOf(s string) string {
	if s == string(PendingQuota) {
		return computev1alpha.ReasonPendingQuota
	}
	if s == "" {
		return computev1alpha.ReasonNoReplicasReady
	}
	return s
}

// ensureInstance creates or rewrites ordinal i of wd in state.
func ensureInstance(ctx context.Context, c client.Client, wd *computev1alpha.WorkloadDeployment, i int, hash string, state State, existing *computev1alpha.Instance) (*computev1alpha.Instance, error) {
	name := names.InstanceName(wd.Name, i)
	if existing != nil && existing.Spec.Controller != nil && existing.Spec.Controller.TemplateHash != hash {
		// A new template replaces the instance (delete and recreate).
		if err := c.Delete(ctx, existing); err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		existing = nil
	}
	inst := existing
	if inst == nil {
		inst = &computev1alpha.Instance{}
		inst.Name, inst.Namespace = name, wd.Namespace
		inst.Labels = map[string]string{
			computev1alpha.WorkloadUIDLabel:            string(wd.Spec.WorkloadRef.UID),
			computev1alpha.WorkloadNameLabel:           wd.Spec.WorkloadRef.Name,
			computev1alpha.WorkloadDeploymentUIDLabel:  string(wd.UID),
			computev1alpha.WorkloadDeploymentNameLabel: wd.Name,
			computev1alpha.InstanceIndexLabel:          strconv.Itoa(i),
			computev1alpha.CityCodeLabel:               wd.Spec.CityCode,
			computev1alpha.PlacementNameLabel:          wd.Spec.PlacementName,
			computev1alpha.ProjectionLabel:             "true",
		}
		inst.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(wd, computev1alpha.GroupVersion.WithKind(computev1alpha.WorkloadDeploymentKind))}
		inst.Spec = *wd.Spec.Template.Spec.DeepCopy()
		inst.Spec.Controller = &computev1alpha.InstanceController{TemplateHash: hash}
		if gated(state) {
			inst.Spec.Controller.SchedulingGates = []computev1alpha.SchedulingGate{{Name: computev1alpha.QuotaSchedulingGate}}
		}
		if err := c.Create(ctx, inst); err != nil {
			return nil, err
		}
	} else if gated(state) != (len(inst.Spec.Controller.SchedulingGates) > 0) {
		inst.Spec.Controller.SchedulingGates = nil
		if gated(state) {
			inst.Spec.Controller.SchedulingGates = []computev1alpha.SchedulingGate{{Name: computev1alpha.QuotaSchedulingGate}}
		}
		if err := c.Update(ctx, inst); err != nil {
			return nil, err
		}
	}
	inst.Status = InstanceStatus(state, hash, wd.Spec.CityCode, i)
	if err := c.Status().Update(ctx, inst); err != nil {
		return nil, err
	}
	return inst, nil
}

// gated reports whether quota still holds an instance in state.
func gated(s State) bool { return s == PendingQuota || s == QuotaExceeded }

// InstanceStatus returns the status the cell and provider write for an
// instance in state.
func InstanceStatus(s State, hash, city string, i int) computev1alpha.InstanceStatus {
	now := metav1.NewTime(Epoch)
	cond := func(t string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: st, Reason: reason, Message: msg, LastTransitionTime: now}
	}
	granted := cond(computev1alpha.ConditionQuotaGranted, metav1.ConditionTrue, computev1alpha.ReasonQuotaAvailable, "quota granted")
	programmed := cond(computev1alpha.ConditionProgrammed, metav1.ConditionTrue, "Programmed", "the instance is programmed")
	var st computev1alpha.InstanceStatus
	switch s {
	case Available:
		st.Conditions = []metav1.Condition{granted, programmed,
			cond(computev1alpha.ConditionAvailable, metav1.ConditionTrue, "Available", "the instance serves"),
			cond(computev1alpha.ConditionReady, metav1.ConditionTrue, computev1alpha.ReasonAvailable, "the instance is available")}
		st.Controller = &computev1alpha.InstanceControllerStatus{ObservedTemplateHash: hash}
		st.NetworkInterfaces = []computev1alpha.InstanceNetworkInterfaceStatus{{Assignments: computev1alpha.InstanceNetworkInterfaceAssignments{
			NetworkIP:  ptr.To(fmt.Sprintf("10.%d.0.%d", cityNumber(city), i+2)),
			ExternalIP: ptr.To(fmt.Sprintf("203.0.%d.%d", 113+cityNumber(city)%10, i+10)),
		}}}
	case Provisioning:
		st.Conditions = []metav1.Condition{granted, cond(computev1alpha.ConditionProgrammed, metav1.ConditionUnknown, "ProgrammingInProgress", ""),
			cond(computev1alpha.ConditionReady, metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "waiting for the runtime provider to start the instance")}
	case PendingQuota:
		st.Conditions = []metav1.Condition{
			cond(computev1alpha.ConditionQuotaGranted, metav1.ConditionFalse, computev1alpha.ReasonPendingEvaluation, "Awaiting capacity evaluation"),
			cond(computev1alpha.ConditionReady, metav1.ConditionFalse, computev1alpha.ReasonPendingQuota, "waiting for quota to be granted")}
	case QuotaExceeded:
		msg := "Quota exceeded for compute.datumapis.com/instances: 10 of 10 in use"
		st.Conditions = []metav1.Condition{
			cond(computev1alpha.ConditionQuotaGranted, metav1.ConditionFalse, computev1alpha.ReasonQuotaExceeded, msg),
			cond(computev1alpha.ConditionReady, metav1.ConditionFalse, computev1alpha.ReasonQuotaExceeded, msg)}
	default:
		msg := map[State]string{
			ImageUnavailable: `failed to pull image "ghcr.io/acme/web:bad": manifest unknown`,
			Crashing:         "the container exited with code 1, 5 times in a row",
			ConfigError:      "port 8080 is used by two containers",
		}[s]
		st.Conditions = []metav1.Condition{granted, programmed,
			cond(computev1alpha.ConditionAvailable, metav1.ConditionFalse, string(s), msg),
			cond(computev1alpha.ConditionReady, metav1.ConditionFalse, string(s), msg)}
	}
	return st
}

// cityNumber gives a city a small stable number for addresses.
func cityNumber(city string) int {
	n := 0
	for _, r := range city {
		n = n*7 + int(r)
	}
	return n % 200
}

// writeWorkloadStatus aggregates the deployments into the Workload status.
// It writes against the resourceVersion Converge read, so a workload
// changed meanwhile is left for the next pass, as a controller would.
func writeWorkloadStatus(ctx context.Context, c client.Client, w *computev1alpha.Workload, wds []*computev1alpha.WorkloadDeployment, current revision.Current) error {
	st := computev1alpha.WorkloadStatus{ObservedGeneration: w.Generation, Deployments: int32(len(wds)),
		CurrentRevision: current.Number, CurrentTemplateHash: current.TemplateHash}
	byPlacement := map[string]*computev1alpha.WorkloadPlacementStatus{}
	var order []string
	worst := ""
	for _, wd := range wds {
		var fresh computev1alpha.WorkloadDeployment
		if err := c.Get(ctx, client.ObjectKeyFromObject(wd), &fresh); err != nil {
			return err
		}
		n := fresh.Status.ReplicaCounts
		ps := byPlacement[fresh.Spec.PlacementName]
		if ps == nil {
			ps = &computev1alpha.WorkloadPlacementStatus{Name: fresh.Spec.PlacementName}
			byPlacement[ps.Name] = ps
			order = append(order, ps.Name)
		}
		cs := computev1alpha.WorkloadCityStatus{CityCode: fresh.Spec.CityCode, DeploymentName: fresh.Name, ReplicaCounts: n,
			Available: n.ReadyReplicas > 0}
		if a := meta.FindStatusCondition(fresh.Status.Conditions, computev1alpha.ConditionAvailable); a != nil && a.Status != metav1.ConditionTrue {
			cs.Reason, cs.Message = a.Reason, a.Message
			if worst == "" {
				worst = a.Reason
			}
		}
		ps.Cities = append(ps.Cities, cs)
		for _, agg := range []*computev1alpha.ReplicaCounts{&ps.ReplicaCounts, &st.ReplicaCounts} {
			agg.Replicas += n.Replicas
			agg.CurrentReplicas += n.CurrentReplicas
			agg.UpdatedReplicas += n.UpdatedReplicas
			agg.ReadyReplicas += n.ReadyReplicas
			agg.DesiredReplicas += n.DesiredReplicas
		}
	}
	slices.Sort(order)
	for _, name := range order {
		st.Placements = append(st.Placements, *byPlacement[name])
	}
	avail := metav1.Condition{Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonReplicasAvailable,
		Message: "at least one replica is ready", ObservedGeneration: w.Generation, LastTransitionTime: metav1.Now()}
	if st.ReadyReplicas == 0 && st.DesiredReplicas > 0 {
		avail.Status, avail.Reason, avail.Message = metav1.ConditionFalse, reasonOf(worst), "no replica is ready"
	}
	st.Conditions = []metav1.Condition{avail}
	w.Status = st
	return c.Status().Update(ctx, w)
}

// Controllers stands in for the controllers in the background: it
// converges workload name every 100ms in the world world() returns, until
// the test ends or stop is called. Errors (the workload not created yet,
// conflicts with the command under test) are retried.
func (h *Harness) Controllers(name string, world func() World) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			_, _ = Converge(ctx, h.Client, h.Namespace, name, world())
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	stop = func() { cancel(); <-done }
	h.T.Cleanup(stop)
	return stop
}

// Fixed returns a world function that always returns w.
func Fixed(w World) func() World { return func() World { return w } }
