package quota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
)

// DefaultTimeout bounds one Evaluate or Release call when Options.Timeout is
// zero.
const DefaultTimeout = 10 * time.Second

// Evaluator is what the InstanceReconciler needs from a quota backend. The
// Client implements it; see the package documentation for how the
// reconciler must call it.
type Evaluator interface {
	// Evaluate makes sure the Instance's claim exists and returns the
	// QuotaGranted condition it maps to (the caller sets
	// observedGeneration). A non-nil error means the backend could not be
	// asked; the condition then says why.
	Evaluate(ctx context.Context, inst *computev1alpha.Instance) (metav1.Condition, error)
	// Release deletes the Instance's claim. A claim already gone is not an
	// error; an unresolvable project returns an error wrapping
	// ErrClaimOrphaned, after which the caller lets the Instance go.
	Release(ctx context.Context, inst *computev1alpha.Instance) error
}

// Options configures a Client.
type Options struct {
	// SourceCluster is the name of this cell; it labels every claim the cell
	// makes (compute.datumapis.com/source-cluster) and must be a valid label
	// value.
	SourceCluster string
	// Reader reads the cell's namespaces. It must be uncached
	// (manager.GetAPIReader()): a cached Namespace read would start a
	// cluster-wide Namespace informer the cell's identity may not be allowed
	// to list.
	Reader client.Reader
	// Catalog reads the cell's InstanceTypes, which size the claims: the
	// manager's cached client. Reader when nil.
	Catalog client.Reader
	// Planes reaches the projects' quota planes.
	Planes Planes
	// Timeout bounds each Evaluate and Release call; zero means
	// DefaultTimeout.
	Timeout time.Duration
	// TargetTTL is how long the target a cell namespace resolved to is
	// remembered (its federation labels are set when the namespace is
	// made and do not change in practice); zero means DefaultTargetTTL. A
	// namespace that cannot be resolved is never remembered.
	TargetTTL time.Duration
}

// DefaultTargetTTL is how long a resolved target is remembered when
// Options.TargetTTL is zero.
const DefaultTargetTTL = 10 * time.Second

// Client claims quota for the Instances of a cell in their projects' quota
// planes. It is safe for concurrent use.
type Client struct {
	sourceCluster string
	reader        client.Reader
	catalog       client.Reader
	planes        Planes
	timeout       time.Duration
	targetTTL     time.Duration

	// targets remembers what each cell namespace resolved to.
	targetsMu sync.Mutex
	targets   map[string]resolved

	// claimCaches are the claim watches WatchSources started, by plane
	// (see planeKey); Evaluate reads claims from them once they synced.
	claimCaches map[string]claimCache
}

// resolved is a remembered target.
type resolved struct {
	target Target
	at     time.Time
}

// claimCache is the cache of this cell's claims in one quota plane.
type claimCache struct {
	reader client.Reader
	synced func() bool
}

var _ Evaluator = (*Client)(nil)

// NewClient checks opts and returns a Client. It marks quota enforcement as
// enabled in compute_quota_enforcement_enabled.
func NewClient(opts Options) (*Client, error) {
	switch {
	case opts.Reader == nil:
		return nil, errors.New("quota client: Reader is required")
	case opts.Planes == nil:
		return nil, errors.New("quota client: Planes is required")
	case opts.SourceCluster == "":
		return nil, errors.New("quota client: SourceCluster (the cell's name) is required")
	}
	if errs := validation.IsValidLabelValue(opts.SourceCluster); len(errs) > 0 {
		return nil, fmt.Errorf("quota client: SourceCluster %q is not a valid label value: %v", opts.SourceCluster, errs)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.TargetTTL <= 0 {
		opts.TargetTTL = DefaultTargetTTL
	}
	if opts.Catalog == nil {
		opts.Catalog = opts.Reader
	}
	SetEnforcementEnabled(true)
	return &Client{
		sourceCluster: opts.SourceCluster, reader: opts.Reader, catalog: opts.Catalog, planes: opts.Planes, timeout: opts.Timeout,
		targetTTL: opts.TargetTTL, targets: map[string]resolved{},
	}, nil
}

// SourceCluster returns the cell name the Client labels claims with.
func (c *Client) SourceCluster() string {
	return c.sourceCluster
}

// Evaluate ensures the Instance's claim and maps it onto QuotaGranted. The
// claim is read from the claim watch of its plane once that has synced (a
// watch that missed an event relists; an event on its way brings the
// Instance back), otherwise from the quota plane itself. Failures to ask the backend are counted in
// compute_quota_eval_failures_total and returned with their condition; a
// claim the quota system answered (granted, exceeded, invalid, no budget)
// returns a nil error.
func (c *Client) Evaluate(ctx context.Context, inst *computev1alpha.Instance) (metav1.Condition, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	claim, err := c.Ensure(ctx, inst)
	cond := Condition(claim, err)
	switch {
	case err == nil:
		return cond, nil
	case IsFailure(cond.Reason):
		countFailure(cond.Reason)
		return cond, err
	case cond.Reason == computev1alpha.ReasonValidationFailed:
		// An answer about the Instance itself (it cannot be sized), not a
		// backend failure: retrying will not change it.
		return cond, nil
	default:
		return cond, err
	}
}

// Release deletes the Instance's claim. Nothing to release (no claim, no
// such namespace or project in the quota plane) is success. When the
// Instance's project cannot be resolved the claim is left behind: Release
// counts it in compute_quota_claim_orphaned_total and returns an error
// wrapping ErrClaimOrphaned, so the caller can log, emit QuotaClaimOrphaned
// and still let the Instance go. Other failures are returned for a retry.
func (c *Client) Release(ctx context.Context, inst *computev1alpha.Instance) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	err := c.Delete(ctx, inst)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrProjectUnresolvable) && !errors.Is(err, errNamespaceUnreadable):
		countOrphan()
		return fmt.Errorf("%w: %w", ErrClaimOrphaned, err)
	}
	switch Reason(err) {
	case computev1alpha.ReasonQuotaNamespaceNotFound, computev1alpha.ReasonQuotaProjectNotFound:
		return nil
	}
	return err
}

// Resolve returns where the Instance's claim lives, from the labels of its
// cell namespace read with the uncached reader, or as a read made less than
// the target TTL ago resolved it.
func (c *Client) Resolve(ctx context.Context, inst *computev1alpha.Instance) (Target, error) {
	c.targetsMu.Lock()
	r, ok := c.targets[inst.Namespace]
	c.targetsMu.Unlock()
	if ok && time.Since(r.at) < c.targetTTL {
		return r.target, nil
	}
	t, err := c.resolve(ctx, inst)
	if err != nil {
		return t, err
	}
	c.targetsMu.Lock()
	c.targets[inst.Namespace] = resolved{target: t, at: time.Now()}
	c.targetsMu.Unlock()
	return t, nil
}

// resolve reads the Instance's cell namespace and resolves its target.
func (c *Client) resolve(ctx context.Context, inst *computev1alpha.Instance) (Target, error) {
	ns := &corev1.Namespace{}
	if err := c.reader.Get(ctx, client.ObjectKey{Name: inst.Namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return Target{}, &Error{Op: OpResolve, Claim: ClaimName(inst),
				Err: fmt.Errorf("%w: namespace %q does not exist in the cell", ErrProjectUnresolvable, inst.Namespace)}
		}
		return Target{}, &Error{Op: OpResolve, Claim: ClaimName(inst),
			Err: fmt.Errorf("%w: %w: failed to read namespace %q: %w", ErrProjectUnresolvable, errNamespaceUnreadable, inst.Namespace, err)}
	}
	t, err := TargetFromNamespace(ns)
	if err != nil {
		return Target{}, &Error{Op: OpResolve, Claim: ClaimName(inst), Err: err}
	}
	return t, nil
}

// Get returns the Instance's claim as the quota plane has it, whoever made
// it, or nil when there is none.
func (c *Client) Get(ctx context.Context, inst *computev1alpha.Instance) (*quotav1alpha1.ResourceClaim, error) {
	t, cl, err := c.connect(ctx, inst)
	if err != nil {
		return nil, err
	}
	return c.get(ctx, cl, t, ClaimName(inst))
}

// Ensure returns the Instance's claim, creating it when there is none. A
// claim another cell made under the same name is returned with an error
// wrapping ErrForeignClaim and left alone. A claim an earlier Instance of the
// same name left behind is deleted (it may carry other sizes) and returned
// while it goes; the next call creates the Instance's own.
func (c *Client) Ensure(ctx context.Context, inst *computev1alpha.Instance) (*quotav1alpha1.ResourceClaim, error) {
	t, cl, err := c.connect(ctx, inst)
	if err != nil {
		return nil, err
	}
	types, err := catalog.Load(ctx, c.catalog)
	if err != nil {
		return nil, &Error{Op: OpCreate, Target: t, Claim: ClaimName(inst), Err: err}
	}
	want, err := BuildClaim(inst, types, t, c.sourceCluster)
	if err != nil {
		if errors.Is(err, ErrUnsizable) {
			// The catalog may lack the Instance's type for a while (a
			// plane upgraded before its InstanceTypes were published, a
			// cell the catalog has not reached yet): a claim already made
			// for this Instance stands, sized when it was made.
			if have, rerr := c.read(ctx, cl, t, ClaimName(inst)); rerr == nil && have != nil && ownerOf(have, inst, c.sourceCluster) == ownedByInstance {
				return have, nil
			}
		}
		return nil, &Error{Op: OpCreate, Target: t, Claim: ClaimName(inst), Err: err}
	}
	have, err := c.read(ctx, cl, t, want.Name)
	if err != nil {
		return nil, err
	}
	if have == nil {
		// A claim the watch has not shown yet makes the create fail with
		// AlreadyExists, and create reads it from the plane then.
		return c.create(ctx, cl, t, want)
	}
	switch ownerOf(have, inst, c.sourceCluster) {
	case ownedByOtherCell:
		return have, &Error{Op: OpGet, Target: t, Claim: want.Name, Err: fmt.Errorf(
			"%w: ResourceClaim %s/%s in project %q was made by cell %q for its namespace %q, not by cell %q for %q; two cells run an Instance of this name, check that each city is served by one cell",
			ErrForeignClaim, have.Namespace, have.Name, t.Project, have.Labels[computev1alpha.SourceClusterLabel],
			have.Labels[computev1alpha.InstanceNamespaceLabel], c.sourceCluster, inst.Namespace)}
	case ownedByPredecessor:
		if have.DeletionTimestamp == nil {
			if err := c.deleteClaim(ctx, cl, t, have); err != nil {
				return nil, err
			}
			ctrl.LoggerFrom(ctx).Info("Deleted the ResourceClaim an earlier Instance of the same name left behind",
				"claim", have.Namespace+"/"+have.Name, "project", t.Project)
			now := metav1.Now()
			have.DeletionTimestamp = &now
		}
	}
	return have, nil
}

// Delete deletes the Instance's claim if this cell made it for this cell
// namespace. It does not wait for the quota system to release the claim.
func (c *Client) Delete(ctx context.Context, inst *computev1alpha.Instance) error {
	t, cl, err := c.connect(ctx, inst)
	if err != nil {
		return err
	}
	have, err := c.get(ctx, cl, t, ClaimName(inst))
	if err != nil || have == nil {
		return err
	}
	if ownerOf(have, inst, c.sourceCluster) == ownedByOtherCell {
		ctrl.LoggerFrom(ctx).Info("Leaving a ResourceClaim another cell made under this Instance's claim name",
			"claim", have.Namespace+"/"+have.Name, "project", t.Project, "sourceCluster", have.Labels[computev1alpha.SourceClusterLabel])
		return nil
	}
	if have.DeletionTimestamp != nil {
		return nil
	}
	return c.deleteClaim(ctx, cl, t, have)
}

// connect resolves the Instance's target and the client of its plane.
func (c *Client) connect(ctx context.Context, inst *computev1alpha.Instance) (Target, client.Client, error) {
	t, err := c.Resolve(ctx, inst)
	if err != nil {
		return Target{}, nil, err
	}
	cl, err := c.planes.ClientFor(t.Project)
	if err != nil {
		return t, nil, &Error{Op: OpConnect, Target: t, Claim: ClaimName(inst), Err: err}
	}
	return t, cl, nil
}

// read returns a claim from the claim watch of t's plane when it has
// synced (nil when the watch has not seen it), otherwise as get does.
func (c *Client) read(ctx context.Context, cl client.Client, t Target, name string) (*quotav1alpha1.ResourceClaim, error) {
	cc, ok := c.claimCacheFor(t.Project)
	if !ok || !cc.synced() {
		return c.get(ctx, cl, t, name)
	}
	claim := &quotav1alpha1.ResourceClaim{}
	err := cc.reader.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: name}, claim)
	switch {
	case err == nil:
		return claim, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	default:
		return c.get(ctx, cl, t, name)
	}
}

// claimCacheFor returns the claim watch of project's plane, if any.
func (c *Client) claimCacheFor(project string) (claimCache, bool) {
	if len(c.claimCaches) == 0 {
		return claimCache{}, false
	}
	sp, ok := c.planes.(*StaticPlanes)
	if !ok {
		return claimCache{}, false
	}
	cfg, err := sp.configFor(project)
	if err != nil {
		return claimCache{}, false
	}
	cc, ok := c.claimCaches[planeKey(cfg)]
	return cc, ok
}

// get reads a claim; nil means there is none. A 404 that is not about the
// claim (a missing project control plane) is an error.
func (c *Client) get(ctx context.Context, cl client.Client, t Target, name string) (*quotav1alpha1.ResourceClaim, error) {
	claim := &quotav1alpha1.ResourceClaim{}
	err := cl.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: name}, claim)
	switch {
	case err == nil:
		return claim, nil
	case claimMissing(err):
		return nil, nil
	default:
		return nil, &Error{Op: OpGet, Target: t, Claim: name, Err: err}
	}
}

// create creates a claim; one made concurrently under the same name is
// read back instead.
func (c *Client) create(ctx context.Context, cl client.Client, t Target, want *quotav1alpha1.ResourceClaim) (*quotav1alpha1.ResourceClaim, error) {
	err := cl.Create(ctx, want)
	switch {
	case err == nil:
		ctrl.LoggerFrom(ctx).V(1).Info("Created ResourceClaim", "claim", want.Namespace+"/"+want.Name, "project", t.Project)
		return want, nil
	case apierrors.IsAlreadyExists(err):
		return c.get(ctx, cl, t, want.Name)
	default:
		return nil, &Error{Op: OpCreate, Target: t, Claim: want.Name, Err: err}
	}
}

// deleteClaim deletes exactly the claim read (UID precondition), so a claim
// recreated meanwhile under the same name survives.
func (c *Client) deleteClaim(ctx context.Context, cl client.Client, t Target, claim *quotav1alpha1.ResourceClaim) error {
	err := cl.Delete(ctx, claim, client.Preconditions{UID: &claim.UID})
	if err == nil || claimMissing(err) || apierrors.IsConflict(err) {
		return nil
	}
	return &Error{Op: OpDelete, Target: t, Claim: claim.Name, Err: err}
}

// claimMissing reports whether err is the quota plane saying the claim does
// not exist, as opposed to the path not existing.
func claimMissing(err error) bool {
	var st apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &st) {
		return false
	}
	d := st.Status().Details
	return d != nil && d.Kind == "resourceclaims"
}
