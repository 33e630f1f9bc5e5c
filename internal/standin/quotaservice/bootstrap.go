package quotaservice

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/quota"
)

// ComputeRegistrations returns the ResourceRegistrations of compute's three
// resource types: Instances counted one by one, vCPU in millicores and memory
// in MiB, all paid for by Projects and claimed on behalf of Projects (which
// is how a cell's claim names its project).
func ComputeRegistrations() []quotav1alpha1.ResourceRegistration {
	project := quotav1alpha1.ConsumerTypeRef{APIGroup: quota.ProjectAPIGroup, Kind: quota.ProjectKind}
	claimers := []quotav1alpha1.ClaimingResource{{APIGroup: quota.ProjectAPIGroup, Kind: quota.ProjectKind}}
	reg := func(name, resourceType string, t quotav1alpha1.RegistrationType, base, display string, factor int64, desc string) quotav1alpha1.ResourceRegistration {
		return quotav1alpha1.ResourceRegistration{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: quotav1alpha1.ResourceRegistrationSpec{
				ConsumerTypeRef:      project,
				Type:                 t,
				ResourceType:         resourceType,
				Description:          desc,
				BaseUnit:             base,
				DisplayUnit:          display,
				UnitConversionFactor: factor,
				ClaimingResources:    claimers,
			},
		}
	}
	return []quotav1alpha1.ResourceRegistration{
		reg("compute-instances", computev1alpha.ResourceTypeInstances, quotav1alpha1.RegistrationTypeEntity,
			"instance", "instance", 1, "Compute Instances a project may run across all cities."),
		reg("compute-vcpus", computev1alpha.ResourceTypeVCPUs, quotav1alpha1.RegistrationTypeAllocation,
			"millicore", "vCPU", 1000, "vCPU the Instances of a project may use, in millicores."),
		reg("compute-memory", computev1alpha.ResourceTypeMemory, quotav1alpha1.RegistrationTypeAllocation,
			"MiB", "GiB", 1024, "Memory the Instances of a project may use, in MiB."),
	}
}

// DefaultGrantFor returns the default grant of a project.
func DefaultGrantFor(project, name, namespace string, allowance map[string]int64) *quotav1alpha1.ResourceGrant {
	g := &quotav1alpha1.ResourceGrant{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       quotav1alpha1.ResourceGrantSpec{ConsumerRef: quota.ProjectRef(project)},
	}
	for _, t := range slices.Sorted(maps.Keys(allowance)) {
		g.Spec.Allowances = append(g.Spec.Allowances, quotav1alpha1.Allowance{
			ResourceType: t,
			Buckets:      []quotav1alpha1.Bucket{{Amount: allowance[t]}},
		})
	}
	return g
}

// bootstrap makes sure the plane has what the service needs: the bucket
// and grant namespaces, the compute registrations and the project's default
// grant. Everything is created only when missing: what exists, possibly
// changed by someone on purpose, is left alone.
type bootstrap struct {
	client client.Client
	reader client.Reader
	opts   Options
}

// Start runs the bootstrap until it succeeds once, retrying with backoff
// while the plane refuses.
func (b *bootstrap) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("bootstrap")
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 20, Cap: 30 * time.Second}
	for {
		err := b.ensure(ctx)
		if err == nil {
			log.Info("Quota plane ready", "project", b.opts.Project, "bucketNamespace", b.opts.BucketNamespace)
			return nil
		}
		log.Error(err, "Quota plane not ready yet; retrying")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff.Step()):
		}
	}
}

// NeedLeaderElection lets every replica bootstrap: it only creates what is
// missing.
func (b *bootstrap) NeedLeaderElection() bool {
	return false
}

// ensure creates whatever is missing.
func (b *bootstrap) ensure(ctx context.Context) error {
	for _, ns := range []string{b.opts.BucketNamespace, b.opts.GrantNamespace} {
		if err := b.createIfMissing(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	if !b.opts.SkipRegistrations {
		for _, r := range ComputeRegistrations() {
			if err := b.createIfMissing(ctx, &r); err != nil {
				return err
			}
		}
	}
	if b.opts.Project != "" && len(b.opts.DefaultGrant) > 0 {
		g := DefaultGrantFor(b.opts.Project, b.opts.GrantName, b.opts.GrantNamespace, b.opts.DefaultGrant)
		if err := b.createIfMissing(ctx, g); err != nil {
			return err
		}
	}
	return nil
}

// createIfMissing creates obj unless an object of its name exists.
func (b *bootstrap) createIfMissing(ctx context.Context, obj client.Object) error {
	existing, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("cannot copy %T", obj)
	}
	err := b.reader.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to read %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	if err := b.client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	ctrl.LoggerFrom(ctx).Info("Created", "kind", fmt.Sprintf("%T", obj), "name", client.ObjectKeyFromObject(obj).String())
	return nil
}
