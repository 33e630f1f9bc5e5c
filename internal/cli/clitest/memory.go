package clitest

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/placement"
)

// InMemory returns, without a server, the deployments and instances the
// controllers would leave for w in world, every city converged (the
// instances of a city listed in world are in the states given, the others
// Available), with fixed UIDs and times for golden files. w gets a UID,
// generation 1 and its status written.
func InMemory(w *computev1alpha.Workload, world World) ([]computev1alpha.WorkloadDeployment, []computev1alpha.Instance) {
	if w.UID == "" {
		w.UID = types.UID("uid-" + w.Name)
	}
	w.Generation = 1
	w.CreationTimestamp = metav1.NewTime(Epoch.Add(-3 * 24 * 60 * 60e9))
	var wds []computev1alpha.WorkloadDeployment
	var insts []computev1alpha.Instance
	var total computev1alpha.ReplicaCounts
	for i := range w.Spec.Placements {
		p := &w.Spec.Placements[i]
		ps := computev1alpha.WorkloadPlacementStatus{Name: p.Name}
		for _, city := range p.CityCodes {
			wd := placement.Desired(w, p, city, names.WorkloadDeploymentName(w.Name, w.UID, p.Name, city))
			wd.UID = types.UID(fmt.Sprintf("uid-%s", wd.Name))
			wd.Generation, wd.Status.ObservedGeneration = 1, 1
			wd.CreationTimestamp = w.CreationTimestamp
			hash := names.TemplateHash(&wd.Spec.Template)
			wd.Status.TemplateHash = hash
			n := int(p.ScaleSettings.MinReplicas)
			for j := range n {
				state := world.stateOf(city, j)
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
					computev1alpha.CityCodeLabel:               city,
					computev1alpha.PlacementNameLabel:          p.Name,
				}
				inst.Spec = *wd.Spec.Template.Spec.DeepCopy()
				inst.Spec.Controller = &computev1alpha.InstanceController{TemplateHash: hash}
				if gated(state) {
					inst.Spec.Controller.SchedulingGates = []computev1alpha.SchedulingGate{{Name: computev1alpha.QuotaSchedulingGate}}
				}
				inst.Status = InstanceStatus(state, hash, city, j)
				insts = append(insts, inst)
				wd.Status.Replicas++
				wd.Status.UpdatedReplicas++
				if state == Available {
					wd.Status.ReadyReplicas++
					wd.Status.CurrentReplicas++
				}
			}
			wd.Status.DesiredReplicas = int32(n)
			cs := computev1alpha.WorkloadCityStatus{CityCode: city, DeploymentName: wd.Name, ReplicaCounts: wd.Status.ReplicaCounts,
				Available: wd.Status.ReadyReplicas > 0}
			ps.Cities = append(ps.Cities, cs)
			add(&ps.ReplicaCounts, wd.Status.ReplicaCounts)
			add(&total, wd.Status.ReplicaCounts)
			wds = append(wds, *wd)
		}
		w.Status.Placements = append(w.Status.Placements, ps)
	}
	w.Status.ObservedGeneration = 1
	w.Status.Deployments = int32(len(wds))
	w.Status.ReplicaCounts = total
	if w.Status.CurrentRevision == 0 {
		w.Status.CurrentRevision = 1
	}
	w.Status.CurrentTemplateHash = names.TemplateHash(&w.Spec.Template)
	return wds, insts
}

// add sums replica counts.
func add(to *computev1alpha.ReplicaCounts, n computev1alpha.ReplicaCounts) {
	to.Replicas += n.Replicas
	to.CurrentReplicas += n.CurrentReplicas
	to.UpdatedReplicas += n.UpdatedReplicas
	to.ReadyReplicas += n.ReadyReplicas
	to.DesiredReplicas += n.DesiredReplicas
}
