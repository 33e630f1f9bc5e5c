package placement

import (
	"cmp"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Plan is what to do to make the WorkloadDeployments of a Workload match
// its targets.
type Plan struct {
	// Targets are the Workload's targets, sorted, with Existing filled in
	// and conflicts recorded in Reason.
	Targets []PlannedTarget
	// Create are the deployments to create.
	Create []*computev1alpha.WorkloadDeployment
	// Update are existing deployments merged with their desired state, to
	// be patched from the existing object of the same name.
	Update []*computev1alpha.WorkloadDeployment
	// Delete are deployments that belong to the Workload and are no longer
	// wanted.
	Delete []*computev1alpha.WorkloadDeployment
}

// PlannedTarget is a target with the deployment that currently holds its
// name.
type PlannedTarget struct {
	Target
	// Existing is the deployment of the target's name as observed, nil when
	// none exists or it belongs to another Workload.
	Existing *computev1alpha.WorkloadDeployment
}

// Diff plans how to get from existing (every WorkloadDeployment of the
// Workload's namespace, in any order) to targets for the Workload w.
// Deployments that belong to another Workload are never touched.
func Diff(w *computev1alpha.Workload, targets []Target, existing []computev1alpha.WorkloadDeployment) Plan {
	byName := make(map[string]*computev1alpha.WorkloadDeployment, len(existing))
	for i := range existing {
		byName[existing[i].Name] = &existing[i]
	}

	var plan Plan
	wanted := map[string]bool{}
	for _, t := range targets {
		pt := PlannedTarget{Target: t}
		cur := byName[t.Name]
		switch {
		case cur != nil && !BelongsTo(cur, w.UID):
			wanted[t.Name] = true // never delete it either
			pt.Desired = nil
			pt.Reason = computev1alpha.ReasonDeploymentConflict
			pt.Message = fmt.Sprintf("WorkloadDeployment %s for city %s already exists and belongs to another Workload (%s); "+
				"compute never adopts it: delete it to let this Workload deploy to %s",
				t.Name, t.CityCode, ownerDescription(cur), t.CityCode)
		case t.Desired == nil:
			// Not bound: no deployment. An existing one is deleted below.
		case cur == nil && t.KeepExisting:
			pt.Desired = nil
		case cur == nil:
			wanted[t.Name] = true
			plan.Create = append(plan.Create, t.Desired)
		case cur.DeletionTimestamp != nil:
			// Wait for it to go; its deletion triggers a new reconcile.
			wanted[t.Name] = true
			pt.Existing = cur
			if pt.Reason == "" {
				pt.Reason = computev1alpha.ReasonDeploymentPending
				pt.Message = fmt.Sprintf("WorkloadDeployment %s is being deleted; it is recreated once it is gone", t.Name)
			}
		default:
			wanted[t.Name] = true
			pt.Existing = cur
			if merged, changed := Merge(cur, t.Desired); changed {
				plan.Update = append(plan.Update, merged)
			}
		}
		plan.Targets = append(plan.Targets, pt)
	}

	for i := range existing {
		wd := &existing[i]
		if wanted[wd.Name] || wd.DeletionTimestamp != nil || !ownedForDeletion(wd, w) {
			continue
		}
		plan.Delete = append(plan.Delete, wd)
	}
	slices.SortFunc(plan.Delete, func(a, b *computev1alpha.WorkloadDeployment) int { return cmp.Compare(a.Name, b.Name) })
	return plan
}

// ownedForDeletion reports whether wd may be deleted on behalf of w: it
// belongs to w and carries w's UID label, so a deployment is only ever
// deleted by the Workload that labelled it.
func ownedForDeletion(wd *computev1alpha.WorkloadDeployment, w *computev1alpha.Workload) bool {
	return BelongsTo(wd, w.UID) && wd.Labels[computev1alpha.WorkloadUIDLabel] == string(w.UID)
}

// ownerDescription names the Workload a deployment belongs to.
func ownerDescription(wd *computev1alpha.WorkloadDeployment) string {
	if ref := metav1.GetControllerOfNoCopy(wd); ref != nil {
		return fmt.Sprintf("%s %s, uid %s", ref.Kind, ref.Name, ref.UID)
	}
	return fmt.Sprintf("Workload %s, uid %s", wd.Spec.WorkloadRef.Name, wd.Spec.WorkloadRef.UID)
}
