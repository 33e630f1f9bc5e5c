package workloaddeployment

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/instanceplan"
	"github.com/citycells/compute/internal/referenceddata"
)

// Event reasons on WorkloadDeployments.
const (
	// EventSuccessfulCreate: Instances were created.
	EventSuccessfulCreate = "SuccessfulCreate"
	// EventFailedCreate: creating an Instance failed.
	EventFailedCreate = "FailedCreate"
	// EventSuccessfulDelete: Instances were deleted.
	EventSuccessfulDelete = "SuccessfulDelete"
	// EventFailedDelete: deleting an Instance failed.
	EventFailedDelete = "FailedDelete"
)

// maxBatch bounds how many writes of one kind a reconcile has in flight.
const maxBatch = 64

// apply carries out a plan: label back-fill, the suspension (suspended:
// no deletes or creates), then deletes, then creates,
// each kind in slow-start batches. Intents about Instances the cache does
// not show yet (expected creates) wait for the next reconcile.
func (r *Reconciler) apply(ctx context.Context, s *scope, plan instanceplan.Plan) error {
	byName := make(map[string]*computev1alpha.Instance, len(s.instances))
	for i := range s.instances {
		byName[s.instances[i].Name] = &s.instances[i]
	}
	// A suspended deployment creates and deletes nothing (see
	// applySuspension).
	suspended := computev1alpha.IsSuspended(s.wd.Annotations)
	var patches, deletes, creates []instanceplan.Intent
	for _, in := range plan.Intents {
		_, seen := byName[in.Name]
		switch {
		case in.Action == instanceplan.ActionPatchLabels && seen:
			patches = append(patches, in)
		case in.Action == instanceplan.ActionDelete && seen && !suspended:
			deletes = append(deletes, in)
		case in.Action == instanceplan.ActionCreate && !suspended:
			creates = append(creates, in)
		}
	}
	if err := inBatches(ctx, patches, func(ctx context.Context, in instanceplan.Intent) error {
		return r.patchLabels(ctx, byName[in.Name], in.Labels)
	}); err != nil {
		return err
	}
	if err := r.applySuspension(ctx, s); err != nil {
		return err
	}
	done := &tally{}
	defer done.report(r.Recorder, s.wd)
	if err := inBatches(ctx, deletes, func(ctx context.Context, in instanceplan.Intent) error {
		return r.deleteInstance(ctx, s.wd, byName[in.Name], in.Reason, done)
	}); err != nil {
		return err
	}
	return inBatches(ctx, creates, func(ctx context.Context, in instanceplan.Intent) error {
		return r.createInstance(ctx, s, in, done)
	})
}

// tally collects the Instances one reconcile created and deleted, so that
// a batch gets one event rather than one per Instance.
type tally struct {
	mu      sync.Mutex
	created []*computev1alpha.Instance
	deleted map[instanceplan.Reason][]*computev1alpha.Instance
}

// create records a created Instance.
func (t *tally) create(inst *computev1alpha.Instance) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.created = append(t.created, inst)
}

// delete records a deleted Instance.
func (t *tally) delete(inst *computev1alpha.Instance, reason instanceplan.Reason) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deleted == nil {
		t.deleted = map[instanceplan.Reason][]*computev1alpha.Instance{}
	}
	t.deleted[reason] = append(t.deleted[reason], inst)
}

// report emits one Normal event for the deletes of each reason and one for
// the creates.
func (t *tally) report(rec events.EventRecorder, wd *computev1alpha.WorkloadDeployment) {
	for _, reason := range slices.Sorted(maps.Keys(t.deleted)) {
		insts := t.deleted[reason]
		related, what := summarize(insts)
		rec.Eventf(wd, related, corev1.EventTypeNormal, EventSuccessfulDelete, "Delete", "deleted %s: %s", what, deleteReasonText(reason))
	}
	if len(t.created) > 0 {
		related, what := summarize(t.created)
		rec.Eventf(wd, related, corev1.EventTypeNormal, EventSuccessfulCreate, "Create", "created %s", what)
	}
}

// maxNamesInEvent bounds the Instance names one event lists.
const maxNamesInEvent = 5

// summarize names Instances for an event, in ordinal order: "Instance
// web-0", or "3 Instances: web-0, web-1, web-2", or with "and N more". The
// event relates to the Instance when there is just one.
func summarize(insts []*computev1alpha.Instance) (runtime.Object, string) {
	if len(insts) == 1 {
		return insts[0], "Instance " + insts[0].Name
	}
	sorted := slices.Clone(insts)
	slices.SortFunc(sorted, func(a, b *computev1alpha.Instance) int {
		oa, _, _ := instanceplan.Ordinal(a.Labels)
		ob, _, _ := instanceplan.Ordinal(b.Labels)
		return cmp.Or(cmp.Compare(oa, ob), cmp.Compare(a.Name, b.Name))
	})
	names := make([]string, 0, maxNamesInEvent)
	for _, i := range sorted[:min(len(sorted), maxNamesInEvent)] {
		names = append(names, i.Name)
	}
	what := fmt.Sprintf("%d Instances: %s", len(insts), strings.Join(names, ", "))
	if more := len(insts) - len(names); more > 0 {
		what += fmt.Sprintf(" and %d more", more)
	}
	return nil, what
}

// inBatches runs fn for every item in batches of 1, 2, 4, ... up to
// maxBatch, stopping after the first batch with an error, so a cell that
// rejects the writes (admission, quota) is not hammered with all of them.
func inBatches[T any](ctx context.Context, items []T, fn func(context.Context, T) error) error {
	for start, size := 0, 1; start < len(items); start, size = start+size, min(2*size, maxBatch) {
		end := min(start+size, len(items))
		errs := make([]error, end-start)
		var wg sync.WaitGroup
		for i := start; i < end; i++ {
			wg.Go(func() { errs[i-start] = fn(ctx, items[i]) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// patchLabels sets labels on an Instance with a metadata-only merge patch
// that keeps every other label. The UID in the patch makes it fail rather
// than label a same-named successor.
func (r *Reconciler) patchLabels(ctx context.Context, inst *computev1alpha.Instance, labels map[string]string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": inst.UID, "labels": labels}})
	if err != nil {
		return fmt.Errorf("failed to encode labels of Instance %s: %w", inst.Name, err)
	}
	if err := r.Client.Patch(ctx, inst.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to back-fill labels of Instance %s: %w", inst.Name, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Back-filled Instance labels", "instance", inst.Name, "labels", labels)
	return nil
}

// deleteInstance deletes an Instance, only if it is still the one that was
// observed (UID precondition): after a delete and recreate, a stale cache
// must not delete the successor.
func (r *Reconciler) deleteInstance(ctx context.Context, wd *computev1alpha.WorkloadDeployment, inst *computev1alpha.Instance, reason instanceplan.Reason, done *tally) error {
	uid := inst.UID
	err := r.Client.Delete(ctx, inst.DeepCopy(), client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// The cache was behind; the next reconcile sees the successor.
		ctrl.LoggerFrom(ctx).V(1).Info("Instance changed before it could be deleted", "instance", inst.Name)
		return nil
	case err != nil:
		r.Recorder.Eventf(wd, inst, corev1.EventTypeWarning, EventFailedDelete, "Delete", "failed to delete Instance %s: %v", inst.Name, err)
		return fmt.Errorf("failed to delete Instance %s: %w", inst.Name, err)
	}
	r.mem.expect.deleted(wd, []types.UID{uid}, r.Clock.Now())
	done.delete(inst, reason)
	return nil
}

// deleteReasonText explains a delete reason to a person.
func deleteReasonText(reason instanceplan.Reason) string {
	switch reason {
	case instanceplan.ReasonOutdatedTemplate:
		return "replacing it with the current template"
	case instanceplan.ReasonOrdinalOutOfRange:
		return "scaling down"
	case instanceplan.ReasonMissingIndex:
		return "it has no instance-index label"
	case instanceplan.ReasonInvalidIndex:
		return "its instance-index label is invalid"
	case instanceplan.ReasonDuplicateIndex:
		return "another instance holds the same instance-index"
	case instanceplan.ReasonNameConflict:
		return "it holds the name of another slot"
	default:
		return string(reason)
	}
}

// createInstance creates the Instance of a slot from the desired template.
func (r *Reconciler) createInstance(ctx context.Context, s *scope, in instanceplan.Intent, done *tally) error {
	inst := r.newInstance(s, in)
	err := r.Client.Create(ctx, inst)
	switch {
	case apierrors.IsAlreadyExists(err):
		if r.heldByPredecessor(ctx, s.wd, inst.Name) {
			// A deployment of the same name that was deleted and created
			// again (Karmada recreating a cell copy) finds its slot taken
			// by the predecessor's Instance, which the garbage collector
			// is removing — or by one the cache no longer shows because it
			// has just gone. It is not ours: expecting it would wait for an
			// Instance that never comes. Wait for the name instead.
			ctrl.LoggerFrom(ctx).V(1).Info("Instance name still held by a predecessor's Instance", "instance", inst.Name)
			return errNameHeld
		}
		// The cache was behind; expect it rather than create it again.
		ctrl.LoggerFrom(ctx).V(1).Info("Instance already exists", "instance", inst.Name)
		r.mem.expect.created(s.wd, s.input.TemplateHash, []instanceplan.Intent{in}, r.Clock.Now())
		return nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The deployment goes with its namespace; nothing to retry.
		ctrl.LoggerFrom(ctx).V(1).Info("Namespace is terminating; not creating Instance", "instance", inst.Name)
		return nil
	case err != nil:
		r.Recorder.Eventf(s.wd, nil, corev1.EventTypeWarning, EventFailedCreate, "Create", "failed to create Instance %s: %v", inst.Name, err)
		return fmt.Errorf("failed to create Instance %s: %w", inst.Name, err)
	}
	r.mem.expect.created(s.wd, s.input.TemplateHash, []instanceplan.Intent{in}, r.Clock.Now())
	done.create(inst)
	return nil
}

// errNameHeld means an Instance could not be created because its name is
// still held by an Instance another owner controls; Reconcile waits for it
// to go (its delete event comes back here through the owner name, and
// nameHeldWait is the safety net).
var errNameHeld = errors.New("instance name held by a predecessor's Instance")

// heldByPredecessor reports whether the Instance called name, which the
// API server says exists, is held by something other than wd: the cache
// shows it controlled by another owner (a deleted deployment of the same
// name), or does not show it at all. In the second case the holder has just
// gone (its delete already in the cache, which brings wd back at once) or
// the cache is behind on wd's own create; waiting for the name is right in
// both, where expecting a create would wait for expectationTTL for an
// Instance that may never come.
func (r *Reconciler) heldByPredecessor(ctx context.Context, wd *computev1alpha.WorkloadDeployment, name string) bool {
	existing := &computev1alpha.Instance{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: wd.Namespace, Name: name}, existing); err != nil {
		return true
	}
	owner := metav1.GetControllerOf(existing)
	return owner == nil || owner.UID != wd.UID
}

// newInstance builds the Instance of a slot: the template's metadata and
// spec, the cell's Location, the linking labels (which win over template
// labels), the controller settings (template hash, scheduling gates: see
// schedulingGates), the
// finalizers and the controller reference that lets the garbage collector
// remove it with its owner.
func (r *Reconciler) newInstance(s *scope, in instanceplan.Intent) *computev1alpha.Instance {
	tpl := &s.wd.Spec.Template
	labels := make(map[string]string, len(tpl.Metadata.Labels)+len(in.Labels))
	maps.Copy(labels, tpl.Metadata.Labels)
	maps.Copy(labels, in.Labels)

	spec := tpl.Spec.DeepCopy()
	spec.Location = r.locationOf(s.wd)
	spec.Controller = &computev1alpha.InstanceController{TemplateHash: s.input.TemplateHash}
	for _, g := range schedulingGates(r.SchedulingGates, tpl) {
		spec.Controller.SchedulingGates = append(spec.Controller.SchedulingGates, computev1alpha.SchedulingGate{Name: g})
	}
	return &computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{
			Name:            in.Name,
			Namespace:       s.wd.Namespace,
			Finalizers:      slices.Clone(r.Finalizers),
			Labels:          labels,
			Annotations:     maps.Clone(tpl.Metadata.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(s.wd, computev1alpha.GroupVersion.WithKind(computev1alpha.WorkloadDeploymentKind))},
		},
		Spec: *spec,
	}
}

// schedulingGates returns the gates of a new Instance of tpl: the cell's
// (Quota, Network), in their order, then ReferencedData when the template
// reads ConfigMaps or Secrets, which holds the Instance until their
// companions are in the cell (the Instance controller releases it).
func schedulingGates(cell []string, tpl *computev1alpha.InstanceTemplateSpec) []string {
	out := slices.Clone(cell)
	if len(referenceddata.Refs(&tpl.Spec)) > 0 {
		out = append(out, computev1alpha.ReferencedDataSchedulingGate)
	}
	return out
}
