package install_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/quota"
)

// The cells of these tests: ServiceAccounts of compute-cells named after
// the cell, as the local platform names them (the Karmada Cluster name
// cell-<city>).
const (
	cellsNamespace = "compute-cells"
	cellDFW        = "cell-dfw"
	cellLHR        = "cell-lhr"
	// heartbeatNamespace holds the cells' heartbeat Leases in the hub.
	heartbeatNamespace = "compute-system"
)

// What the policies' refusals say, for cell-dfw.
const (
	dfwMayWriteInTheHub = "cell cell-dfw may write only the Instances of city DFW and events regarding them (labelled compute.datumapis.com/city-code=DFW) and its own heartbeat Lease cell-dfw"
	dfwMayWriteClaims   = "cell cell-dfw may write only the ResourceClaims labelled compute.datumapis.com/source-cluster=cell-dfw"
)

// hubInstance returns an Instance copy as a cell writes it back to the hub,
// labelled with city (none when empty).
func hubInstance(namespace, name, city string) *computev1alpha.Instance {
	labels := map[string]string{computev1alpha.WorkloadDeploymentNameLabel: "web"}
	if city != "" {
		labels[computev1alpha.CityCodeLabel] = city
	}
	return &computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec:       makeWD(namespace, "web", "DFW", 1).Spec.Template.Spec,
	}
}

// heartbeat returns a cell's heartbeat Lease in the hub.
// instanceEvent is a hub event regarding Instance name of namespace,
// labelled with city (none when empty), as a cell's Pod event forwarder
// writes it.
func instanceEvent(namespace, name, instance, city string) *corev1.Event {
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: computev1alpha.GroupVersion.String(), Kind: computev1alpha.InstanceKind, Namespace: namespace, Name: instance,
		},
		Reason: "BackOff", Message: "Back-off restarting failed container app", Type: corev1.EventTypeWarning,
		FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
	}
	if city != "" {
		ev.Labels = map[string]string{computev1alpha.CityCodeLabel: city}
	}
	return ev
}

func heartbeat(cell string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: heartbeatNamespace, Name: cell},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(cell), LeaseDurationSeconds: ptr.To[int32](6)},
	}
}

// claimOf returns an Instance's ResourceClaim as cell makes it (labelled
// with its name; none when empty).
func claimOf(namespace, name, cell string) *quotav1alpha1.ResourceClaim {
	labels := map[string]string{computev1alpha.InstanceNamespaceLabel: "ns-cell"}
	if cell != "" {
		labels[computev1alpha.SourceClusterLabel] = cell
	}
	ref := quota.ProjectRef(project)
	return &quotav1alpha1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: quotav1alpha1.ResourceClaimSpec{
			ConsumerRef: ref,
			Requests:    []quotav1alpha1.ResourceRequest{{ResourceType: computev1alpha.ResourceTypeInstances, Amount: 1}},
			ResourceRef: quotav1alpha1.UnversionedObjectReference{APIGroup: ref.APIGroup, Kind: ref.Kind, Name: ref.Name},
		},
	}
}

// newNamespace creates a namespace in plane for one test.
func newNamespace(t *testing.T, plane, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := env.Client(plane).Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// refusedBy reports whether err is the isolation policy's refusal, saying
// what the cell may write.
func refusedBy(err error, says string) error {
	switch {
	case err == nil:
		return errors.New("admitted")
	case !apierrors.IsForbidden(err):
		return fmt.Errorf("want 403 Forbidden from the isolation policy, got %w", err)
	case !strings.Contains(err.Error(), says):
		return fmt.Errorf("refused without saying %q: %w", says, err)
	}
	return nil
}

// policyEnforced waits until the API server enforces a freshly installed
// policy: probe must come back refused, saying says.
func policyEnforced(t *testing.T, says string, probe func() error) {
	t.Helper()
	eventually(t, 30*time.Second, "the cell isolation policy is enforced", func() error {
		return refusedBy(probe(), says)
	})
}

// expectWrites checks that every write of refused is refused by the isolation
// policy with a message saying says, and that every write of admitted is
// admitted.
func expectWrites(t *testing.T, who, says string, refused, admitted []write) {
	t.Helper()
	for _, w := range refused {
		err := w.do()
		if why := refusedBy(err, says); why != nil {
			t.Errorf("%s %s: %v", who, w.what, why)
			continue
		}
		t.Logf("%s %s: %v", who, w.what, err)
	}
	for _, w := range admitted {
		if err := w.do(); err != nil {
			t.Errorf("%s must be admitted %s: %v", who, w.what, err)
		}
	}
}

// write is one request of a test, described by what it does.
type write struct {
	what string
	do   func() error
}

// TestACellWritesOnlyItsOwnCityInTheHub: the hub overlay's admission policy
// keeps a cell's ServiceAccount (compute-cells/cell-dfw, which serves DFW)
// to the Instance copies of its city and to its own heartbeat Lease,
// whatever the RBAC it shares with every cell allows: it cannot create,
// change, write the status of or delete LHR's copies, relabel its own copy
// into LHR, nor renew LHR's Lease; its own writes are admitted, and
// identities outside compute-cells are not concerned.
func TestACellWritesOnlyItsOwnCityInTheHub(t *testing.T) {
	installed(t)
	ctx := context.Background()
	admin := env.Client(hub)
	ns := newNamespace(t, hub, "isolation-")
	dfw := env.ClientFor(serviceAccountConfig(t, hub, cellsNamespace, cellDFW))

	lhrCopy, noCity := hubInstance(ns, "web-lhr-0", "LHR"), hubInstance(ns, "web-0", "")
	lhrLease := heartbeat(cellLHR)
	lhrEvent := instanceEvent(ns, "web-lhr-0.1", "web-lhr-0", "LHR")
	for _, obj := range []client.Object{lhrCopy, noCity, lhrLease, lhrEvent} {
		if err := admin.Create(ctx, obj); err != nil {
			t.Fatalf("the admin writes %s %s, unconcerned by the policy: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	policyEnforced(t, dfwMayWriteInTheHub, func() error {
		return dfw.Create(ctx, hubInstance(ns, "web-lhr-1", "LHR"), client.DryRunAll)
	})

	own := hubInstance(ns, "web-dfw-0", "DFW")
	ownLease := heartbeat(cellDFW)
	relabel := func(inst *computev1alpha.Instance, city string) func() error {
		return func() error {
			changed := inst.DeepCopy()
			changed.Labels[computev1alpha.CityCodeLabel] = city
			return dfw.Patch(ctx, changed, client.MergeFrom(inst), client.DryRunAll)
		}
	}
	annotate := func(inst *computev1alpha.Instance) func() error {
		return func() error {
			changed := inst.DeepCopy()
			changed.Annotations = map[string]string{"isolation": "test"}
			return dfw.Patch(ctx, changed, client.MergeFrom(inst), client.DryRunAll)
		}
	}
	setStatus := func(inst *computev1alpha.Instance) func() error {
		return func() error {
			changed := inst.DeepCopy()
			changed.Status.Suspended = true
			return dfw.Status().Patch(ctx, changed, client.MergeFrom(inst), client.DryRunAll)
		}
	}
	renew := func(l *coordinationv1.Lease) func() error {
		return func() error {
			got := &coordinationv1.Lease{}
			if err := admin.Get(ctx, client.ObjectKeyFromObject(l), got); err != nil {
				return err
			}
			got.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			return dfw.Update(ctx, got)
		}
	}

	ownEvent := instanceEvent(ns, "web-dfw-0.1", "web-dfw-0", "DFW")
	count := func(ev *corev1.Event) func() error {
		return func() error {
			got := &corev1.Event{}
			if err := admin.Get(ctx, client.ObjectKeyFromObject(ev), got); err != nil {
				return err
			}
			got.Count++
			return dfw.Update(ctx, got)
		}
	}
	aboutAPod := instanceEvent(ns, "web-dfw-0.2", "web-dfw-0", "DFW")
	aboutAPod.InvolvedObject = corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: "web-dfw-0"}
	expectWrites(t, "cell-dfw in the hub", dfwMayWriteInTheHub,
		[]write{
			{"creating an event of LHR", func() error {
				return dfw.Create(ctx, instanceEvent(ns, "web-lhr-0.2", "web-lhr-0", "LHR"), client.DryRunAll)
			}},
			{"creating an event labelled with no city", func() error {
				return dfw.Create(ctx, instanceEvent(ns, "web-dfw-0.3", "web-dfw-0", ""), client.DryRunAll)
			}},
			{"creating an event of its city regarding no Instance", func() error { return dfw.Create(ctx, aboutAPod, client.DryRunAll) }},
			{"updating LHR's event", count(lhrEvent)},
		},
		[]write{
			{"creating an event of its own Instance", func() error { return dfw.Create(ctx, ownEvent) }},
			{"updating its own event", count(ownEvent)},
		})
	expectWrites(t, "cell-dfw in the hub", dfwMayWriteInTheHub,
		[]write{
			{"creating an LHR Instance copy", func() error { return dfw.Create(ctx, hubInstance(ns, "web-lhr-2", "LHR"), client.DryRunAll) }},
			{"creating a copy labelled with no city", func() error { return dfw.Create(ctx, hubInstance(ns, "web-1", ""), client.DryRunAll) }},
			{"changing LHR's copy", annotate(lhrCopy)},
			{"relabelling LHR's copy into DFW", relabel(lhrCopy, "DFW")},
			{"writing the status of LHR's copy", setStatus(lhrCopy)},
			{"deleting LHR's copy", func() error { return dfw.Delete(ctx, lhrCopy, client.DryRunAll) }},
			{"changing a copy labelled with no city", annotate(noCity)},
			{"creating another cell's Lease", func() error { return dfw.Create(ctx, heartbeat("cell-sin"), client.DryRunAll) }},
			{"renewing LHR's Lease", renew(lhrLease)},
		},
		[]write{
			{"creating its own DFW copy", func() error { return dfw.Create(ctx, own) }},
			{"changing its own copy", annotate(own)},
			{"writing the status of its own copy", setStatus(own)},
			{"creating its own Lease", func() error { return dfw.Create(ctx, ownLease) }},
			{"renewing its own Lease", renew(ownLease)},
		})
	// Its own copy, now real, cannot be moved to another city either.
	expectWrites(t, "cell-dfw in the hub", dfwMayWriteInTheHub,
		[]write{{"relabelling its own copy into LHR", relabel(own, "LHR")}},
		[]write{{"deleting its own copy", func() error { return dfw.Delete(ctx, own) }}})

	// An identity outside compute-cells holding the very same rights (an
	// operator's, here) is not matched: the policy concerns cells only.
	const operator = "writeback-operator"
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "isolation-test-" + operator},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "compute-cell-writeback"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: heartbeatNamespace, Name: operator}},
	}
	if err := admin.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	other := env.ClientFor(serviceAccountConfig(t, hub, heartbeatNamespace, operator))
	eventually(t, 30*time.Second, "an identity outside compute-cells writes any city's copy", func() error {
		return other.Create(ctx, hubInstance(ns, "web-lhr-3", "LHR"), client.DryRunAll)
	})
	if err := other.Delete(ctx, lhrCopy, client.DryRunAll); err != nil {
		t.Errorf("an identity outside compute-cells deleting LHR's copy: %v", err)
	}
}

// TestACellWritesOnlyItsOwnClaimsInAQuotaPlane: the quota-plane overlay's
// admission policy keeps a cell's ServiceAccount (compute-cells/cell-dfw)
// to the ResourceClaims labelled with its name: it cannot make a claim in
// another cell's name or without one, nor delete another cell's claim; its
// own are admitted, and compute-quota still writes every cell's claims.
func TestACellWritesOnlyItsOwnClaimsInAQuotaPlane(t *testing.T) {
	installed(t)
	ctx := context.Background()
	admin := env.Client(project)
	ns := newNamespace(t, project, "isolation-")
	dfw := env.ClientFor(serviceAccountConfig(t, project, cellsNamespace, cellDFW))

	lhrClaim := claimOf(ns, "instance-web-lhr-0", cellLHR)
	if err := admin.Create(ctx, lhrClaim); err != nil {
		t.Fatalf("the admin makes cell-lhr's claim, unconcerned by the policy: %v", err)
	}
	policyEnforced(t, dfwMayWriteClaims, func() error {
		return dfw.Create(ctx, claimOf(ns, "instance-web-lhr-1", cellLHR), client.DryRunAll)
	})

	own := claimOf(ns, "instance-web-dfw-0", cellDFW)
	expectWrites(t, "cell-dfw in the quota plane", dfwMayWriteClaims,
		[]write{
			{"making a claim in cell-lhr's name", func() error {
				return dfw.Create(ctx, claimOf(ns, "instance-web-lhr-2", cellLHR), client.DryRunAll)
			}},
			{"making a claim in no cell's name", func() error {
				return dfw.Create(ctx, claimOf(ns, "instance-web-1", ""), client.DryRunAll)
			}},
			{"deleting cell-lhr's claim", func() error { return dfw.Delete(ctx, lhrClaim, client.DryRunAll) }},
		},
		[]write{
			{"making its own claim", func() error { return dfw.Create(ctx, own) }},
			{"deleting its own claim", func() error { return dfw.Delete(ctx, own) }},
		})

	// compute-quota, which answers every cell's claims, is not matched.
	quotaService := env.ClientFor(serviceAccountConfig(t, project, "compute-system", "compute-quota"))
	changed := lhrClaim.DeepCopy()
	changed.Annotations = map[string]string{"isolation": "test"}
	if err := quotaService.Patch(ctx, changed, client.MergeFrom(lhrClaim), client.DryRunAll); err != nil {
		t.Errorf("compute-quota changing cell-lhr's claim: %v", err)
	}
}

// TestACellWritesBackOnlyItsOwnCitysDeployments (#38, hole 3): the hub
// overlay's policy compute-cell-instance-owners checks the deployment an
// Instance names against the city the management role recorded for it
// (the namespace's ConfigMap compute-deployment-cities), so cell-dfw cannot
// write back, labelled DFW as the city policy makes it, an Instance of
// LHR's deployment, of a deployment not federated there, or of none, nor
// squat, as an Instance of its own deployment, a name LHR's write-back
// will need (web-lhr-5) — and still writes back its own deployment's,
// status included, under a name that starts with another city's shorter
// deployment name (web-dfw-0 beside LHR's web) or a free one.
func TestACellWritesBackOnlyItsOwnCitysDeployments(t *testing.T) {
	installed(t)
	ctx := context.Background()
	ns := newNamespace(t, hub, "owners-")
	dfw := env.ClientFor(serviceAccountConfig(t, hub, cellsNamespace, cellDFW))
	if err := env.Client(hub).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "compute-deployment-cities"},
		Data:       map[string]string{"web-dfw": "DFW", "web-lhr": "LHR", "web": "LHR"},
	}); err != nil {
		t.Fatal(err)
	}
	claiming := func(name, owner string) *computev1alpha.Instance {
		inst := hubInstance(ns, name, "DFW")
		if owner == "" {
			delete(inst.Labels, computev1alpha.WorkloadDeploymentNameLabel)
		} else {
			inst.Labels[computev1alpha.WorkloadDeploymentNameLabel] = owner
		}
		return inst
	}
	const may = "cell cell-dfw may write back only the Instances of the WorkloadDeployments of city DFW"
	policyEnforced(t, may, func() error { return dfw.Create(ctx, claiming("web-lhr-9", "web-lhr"), client.DryRunAll) })
	for what, c := range map[string]struct {
		inst *computev1alpha.Instance
		says string
	}{
		"an Instance of LHR's deployment":         {claiming("web-lhr-0", "web-lhr"), "belongs to WorkloadDeployment web-lhr of city LHR"},
		"an Instance of a deployment not here":    {claiming("web-sin-0", "web-sin"), "names WorkloadDeployment web-sin, which is not federated to this namespace"},
		"an Instance naming no deployment":        {claiming("stray-0", ""), "names no WorkloadDeployment"},
		"an Instance of LHR's under its own name": {claiming("web-dfw-7", "web-lhr"), "belongs to WorkloadDeployment web-lhr of city LHR"},
		"its own Instance under a name of LHR's":  {claiming("web-lhr-5", "web-dfw"), "is named after WorkloadDeployment web-lhr of city LHR"},
	} {
		if why := refusedBy(dfw.Create(ctx, c.inst, client.DryRunAll), c.says); why != nil {
			t.Errorf("cell-dfw writing back %s: %v", what, why)
		}
	}
	if err := dfw.Create(ctx, claiming("stray-dfw", "web-dfw"), client.DryRunAll); err != nil {
		t.Errorf("cell-dfw writing back its own Instance under a free name: %v", err)
	}
	own := claiming("web-dfw-0", "web-dfw")
	if err := dfw.Create(ctx, own); err != nil {
		t.Fatalf("cell-dfw writing back an Instance of its own deployment: %v", err)
	}
	changed := own.DeepCopy()
	changed.Status.Conditions = []metav1.Condition{{Type: computev1alpha.ConditionReady, Status: metav1.ConditionTrue,
		Reason: computev1alpha.ReasonAvailable, Message: "up", LastTransitionTime: metav1.Now()}}
	if err := dfw.Status().Update(ctx, changed); err != nil {
		t.Errorf("cell-dfw writing the status of its own Instance: %v", err)
	}
	if err := dfw.Delete(ctx, own); err != nil {
		t.Errorf("cell-dfw deleting its own Instance: %v", err)
	}
}
