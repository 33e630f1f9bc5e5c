package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/patch"
	"github.com/citycells/compute/internal/placement"
	"github.com/citycells/compute/internal/revision"
	"github.com/citycells/compute/internal/workloadstatus"
)

// scope is everything one reconcile observed, read once before any phase
// runs; the phases read it and never change it.
type scope struct {
	client   client.Client
	recorder events.EventRecorder
	// workload is the Workload as read, its placements normalised
	// (normalized): what every phase plans from and the status is
	// written on.
	workload *computev1alpha.Workload
	// now is the time of the reconcile, read once: it stamps revisions,
	// rollout annotations, failover decisions, the failover rate and
	// condition transitions. No phase reads the clock.
	now    time.Time
	cities locations.Cities
	// deployments are the WorkloadDeployments of the namespace that can
	// matter to the Workload (deploymentsOf).
	deployments []computev1alpha.WorkloadDeployment
	// revisions are the revisions of the Workload.
	revisions []appsv1.ControllerRevision
	// instanceType is the InstanceType the template names; nil when the
	// catalog has none of that name.
	instanceType *computev1alpha.InstanceType
}

// getWorkload reads the Workload key; nil, with no error, when it is gone
// or being deleted (its deployments and revisions carry it as owner: the
// garbage collector removes them).
func getWorkload(ctx context.Context, c client.Client, key types.NamespacedName) (*computev1alpha.Workload, error) {
	w := &computev1alpha.Workload{}
	if err := c.Get(ctx, key, w); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !w.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return w, nil
}

// observe reads what the reconcile of w depends on into a scope, at one
// time. On an error the scope still holds the Workload, the client and the
// time, for observationFailed.
func (r *Reconciler) observe(ctx context.Context, c client.Client, recorder events.EventRecorder, w *computev1alpha.Workload) (*scope, error) {
	s := &scope{client: c, recorder: recorder, workload: normalized(w), now: r.now()}
	cities, err := locations.Load(ctx, c, w.Namespace)
	if err != nil {
		return s, err
	}
	// The namespace's deployments are read from the cache without a copy
	// each (thousands at scale, every reconcile); only those that can
	// matter to w are copied (deploymentsOf).
	var wds computev1alpha.WorkloadDeploymentList
	if err := c.List(ctx, &wds, client.InNamespace(w.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return s, fmt.Errorf("failed to list WorkloadDeployments in namespace %s: %w", w.Namespace, err)
	}
	var revs appsv1.ControllerRevisionList
	if err := c.List(ctx, &revs, client.InNamespace(w.Namespace),
		client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(w.UID)}); err != nil {
		return s, fmt.Errorf("failed to list ControllerRevisions of Workload %s: %w", w.Name, err)
	}
	instanceType, err := observeInstanceType(ctx, c, w)
	if err != nil {
		return s, err
	}
	s.cities, s.deployments, s.revisions, s.instanceType = cities, deploymentsOf(w, wds.Items), revision.Owned(w, revs.Items), instanceType
	return s, nil
}

// normalized returns w with the deprecated cityCodes of its placements
// rewritten into the locationSelector they stand for
// (placement.RewriteCityCodes), as admission rewrites them: a Workload
// stored before admission did keeps running on its cityCodes without its
// spec being written. w itself is returned when nothing is to rewrite, a
// copy otherwise. Where the Workload runs does not change (the placement
// reads cityCodes as that selector already) and its deployments keep their
// names.
func normalized(w *computev1alpha.Workload) *computev1alpha.Workload {
	var out *computev1alpha.Workload
	for i := range w.Spec.Placements {
		p := w.Spec.Placements[i].DeepCopy()
		if !placement.RewriteCityCodes(p) {
			continue
		}
		if out == nil {
			out = w.DeepCopy()
		}
		out.Spec.Placements[i] = *p
	}
	if out == nil {
		return w
	}
	return out
}

// observationFailed reports that what the status of s.workload depends on
// could not be read: its conditions turn Unknown (Cluster API's rule: a
// condition that cannot be computed is not left standing) and err is
// returned to retry.
func observationFailed(ctx context.Context, s *scope, err error) error {
	st := workloadstatus.Unknown(s.workload, computev1alpha.ReasonObservationFailed,
		fmt.Sprintf("the management plane cannot read what this condition depends on (%v); it retries", err), metav1.NewTime(s.now))
	_, statusErr := patch.Status(ctx, s.client, s.workload, func(w *computev1alpha.Workload) { w.Status = st })
	return errors.Join(err, statusErr)
}

// observeInstanceType reads the InstanceType w's template names; nil when
// there is none of that name.
func observeInstanceType(ctx context.Context, c client.Reader, w *computev1alpha.Workload) (*computev1alpha.InstanceType, error) {
	name := catalog.Canonical(w.Spec.Template.Spec.Runtime.Resources.InstanceType)
	if name == "" {
		return nil, nil
	}
	it := &computev1alpha.InstanceType{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, it); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed to get InstanceType %s: %w", name, err)
	}
	return it, nil
}

// deploymentNamePrefixLength bounds the part of a Workload's name that
// begins every WorkloadDeployment name it plans: names.WorkloadDeploymentName
// keeps at least the first 63 − 13 = 50 characters for a three-letter city
// code (the only codes the API admits); 16 leaves room for any code up to
// 37 characters.
const deploymentNamePrefixLength = 16

// deploymentsOf returns deep copies of the deployments of the namespace,
// listed from the cache without copies, that can matter to w: those that
// belong to w or carry its UID label (its own, to update or delete) and
// those whose name begins like every deployment name planned for w (a name
// taken by another Workload's deployment is a conflict). Any other
// deployment is neither updated, deleted nor a conflict for w, so leaving it
// out changes nothing but the memory and time of the copies.
func deploymentsOf(w *computev1alpha.Workload, all []computev1alpha.WorkloadDeployment) []computev1alpha.WorkloadDeployment {
	prefix := strings.TrimRight(w.Name[:min(len(w.Name), deploymentNamePrefixLength)], "-.")
	var out []computev1alpha.WorkloadDeployment
	for i := range all {
		wd := &all[i]
		if placement.BelongsTo(wd, w.UID) || wd.Labels[computev1alpha.WorkloadUIDLabel] == string(w.UID) || strings.HasPrefix(wd.Name, prefix) {
			out = append(out, *wd.DeepCopy())
		}
	}
	return out
}
