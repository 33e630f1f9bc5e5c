package clitest

import (
	"slices"

	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/placement"
	"github.com/citycells/compute/internal/revision"
	"github.com/citycells/compute/internal/status"
	"github.com/citycells/compute/internal/workloadstatus"
)

// InMemory returns, without a server, the deployments and instances the
// controllers would leave for w in world, every city converged (the
// instances of a city listed in world are in the states given, the others
// Available), with fixed UIDs and times for golden files. w gets a UID,
// generation 1 and the status the Workload controller computes from those
// deployments (workloadstatus.Compute).
func InMemory(w *computev1alpha.Workload, world World) ([]computev1alpha.WorkloadDeployment, []computev1alpha.Instance) {
	if w.UID == "" {
		w.UID = types.UID("uid-" + w.Name)
	}
	w.Generation = 1
	w.CreationTimestamp = metav1.NewTime(Epoch.Add(-3 * 24 * 60 * 60e9))
	targets := placement.Expand(w, placement.Targets(w, BoundCities(w), nil), nil)
	wds := make([]computev1alpha.WorkloadDeployment, 0, len(targets))
	var insts []computev1alpha.Instance
	for _, t := range targets {
		wd := t.Desired
		wd.UID = types.UID(fmt.Sprintf("uid-%s", wd.Name))
		wd.Generation, wd.Status.ObservedGeneration = 1, 1
		wd.CreationTimestamp = w.CreationTimestamp
		hash := names.TemplateHash(&wd.Spec.Template)
		wd.Status.TemplateHash = hash
		n := int(wd.Spec.ScaleSettings.MinReplicas)
		var blocked *metav1.Condition
		first := len(insts)
		for j := range n {
			state := world.stateOf(t.CityCode, j)
			inst := computev1alpha.Instance{}
			inst.Name, inst.Namespace = names.InstanceName(wd.Name, j), w.Namespace
			inst.UID = types.UID("uid-" + inst.Name)
			inst.CreationTimestamp = metav1.NewTime(Epoch.Add(-45 * 60e9))
			inst.Labels = map[string]string{
				computev1alpha.WorkloadUIDLabel:            string(w.UID),
				computev1alpha.WorkloadNameLabel:           w.Name,
				computev1alpha.WorkloadDeploymentUIDLabel:  string(wd.UID),
				computev1alpha.WorkloadDeploymentNameLabel: wd.Name,
				computev1alpha.InstanceIndexLabel:          strconv.Itoa(j),
				computev1alpha.CityCodeLabel:               t.CityCode,
				computev1alpha.PlacementNameLabel:          t.Placement,
			}
			inst.Spec = *wd.Spec.Template.Spec.DeepCopy()
			inst.Spec.Controller = &computev1alpha.InstanceController{TemplateHash: hash}
			if gated(state) {
				inst.Spec.Controller.SchedulingGates = []computev1alpha.SchedulingGate{{Name: computev1alpha.QuotaSchedulingGate}}
			}
			inst.Status = InstanceStatus(state, hash, t.CityCode, j)
			insts = append(insts, inst)
			wd.Status.Replicas++
			wd.Status.UpdatedReplicas++
			if state == Available {
				wd.Status.ReadyReplicas++
				wd.Status.CurrentReplicas++
			} else if ready := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionReady); blocked == nil && ready != nil {
				blocked = ready
			}
		}
		wd.Status.DesiredReplicas = int32(n)
		wd.Status.Conditions = CellConditions(wd.Status.ReplicaCounts, blocked)
		wd.Status.NotReady = status.NotReady(insts[first:], hash)
		wds = append(wds, *wd)
	}
	WriteStatus(w, wds, nil)
	return wds, insts
}

// BoundCities returns every city w's placements name, bound and ready.
func BoundCities(w *computev1alpha.Workload) locations.Cities {
	var codes []string
	for _, p := range w.Spec.Placements {
		codes = append(codes, p.CityCodes...)
		codes = append(codes, locations.SelectedCityCodes(p.LocationSelector)...)
	}
	slices.Sort(codes)
	return locations.ReadyCities(LocationNamespace, slices.Compact(codes)...)
}

// CellConditions are the Available, Progressing and ReplicasReady
// conditions a cell reports for a WorkloadDeployment with counts c:
// available when a replica is ready, else blocked by the Ready condition of
// an instance (nil: still provisioning); every replica ready and up to
// date, else not (with an instance's failure, as the cell names it).
func CellConditions(c computev1alpha.ReplicaCounts, blocked *metav1.Condition) []metav1.Condition {
	avail := metav1.Condition{Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionTrue,
		Reason: computev1alpha.ReasonReplicasAvailable, Message: fmt.Sprintf("%d of %d replicas ready", c.ReadyReplicas, c.DesiredReplicas)}
	if c.ReadyReplicas == 0 && c.DesiredReplicas > 0 {
		avail.Status, avail.Reason = metav1.ConditionFalse, computev1alpha.ReasonProvisioning
		if blocked != nil {
			avail.Reason, avail.Message = blocked.Reason, blocked.Message
		}
	}
	rr := metav1.Condition{Type: computev1alpha.ConditionReplicasReady, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonAllReplicasReady}
	if c.ReadyReplicas != c.DesiredReplicas || c.UpdatedReplicas != c.DesiredReplicas || c.Replicas != c.DesiredReplicas {
		rr.Status, rr.Reason = metav1.ConditionFalse, computev1alpha.ReasonReplicasNotReady
		if blocked != nil && status.Failing(blocked.Reason) {
			rr.Reason = blocked.Reason
		}
	}
	return []metav1.Condition{avail, {Type: computev1alpha.ConditionProgressing, Status: metav1.ConditionFalse,
		Reason: computev1alpha.ReasonRolloutComplete}, rr}
}

// WriteStatus writes into w the status the Workload controller computes
// when its cells report wds and cities are bound to the project (nil: every
// city w names, ready), every write landed; w's status.rollout and current
// revision stand when set.
func WriteStatus(w *computev1alpha.Workload, wds []computev1alpha.WorkloadDeployment, cities locations.Cities) {
	if cities == nil {
		cities = BoundCities(w)
	}
	byName := map[string]*computev1alpha.WorkloadDeployment{}
	for i := range wds {
		byName[wds[i].Name] = &wds[i]
	}
	in := workloadstatus.Input{Workload: w, Rollout: w.Status.Rollout, Settled: true, Now: metav1.NewTime(Epoch),
		Revision: &revision.Current{Number: max(w.Status.CurrentRevision, 1), TemplateHash: names.TemplateHash(&w.Spec.Template)}}
	for _, t := range placement.Targets(w, cities, wds) {
		in.Cities = append(in.Cities, workloadstatus.City{Target: t, Deployment: byName[t.Name]})
		delete(byName, t.Name)
	}
	for _, wd := range byName {
		in.Leaving = append(in.Leaving, wd)
	}
	w.Status = workloadstatus.Compute(in)
}
