package simnetwork

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	"github.com/citycells/compute/internal/names"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "simulated-networking"

// Defaults of the stand-in.
const (
	// DefaultCIDR is a city's address pool when none is given.
	DefaultCIDR = "10.128.0.0/16"
	// DefaultSubnetPrefixLength is the size of the subnet of each network
	// in the city.
	DefaultSubnetPrefixLength = 24
	// RetryAfter is how soon a refused binding is looked at again.
	RetryAfter = 10 * time.Second
	// SubnetClass is the class of the subnets the stand-in allocates.
	SubnetClass = "private"
)

// Reconciler is the networking stand-in of one cell.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the cell.
	Client client.Client
	// Clock stamps conditions.
	Clock clock.PassiveClock
	// CIDR is the city's IPv4 address pool; DefaultCIDR when empty.
	CIDR string
	// SubnetPrefixLength is the prefix length of each network's subnet;
	// DefaultSubnetPrefixLength when zero.
	SubnetPrefixLength int
	// Location is the Location the cell serves, recorded on SubnetClaims
	// and Subnets; when nil, the city code (lower case) in the binding's
	// namespace.
	Location *networkingv1alpha.LocationReference

	pool   *pool
	seeded bool
}

// +kubebuilder:rbac:groups=networking.datumapis.com,resources=networkbindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.datumapis.com,resources=networkbindings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=networking.datumapis.com,resources=networkcontexts;subnetclaims;subnets,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=networking.datumapis.com,resources=networkcontexts/status;subnetclaims/status;subnets/status,verbs=get;update;patch

// SetupWithManager checks the settings and registers the stand-in.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("simulated networking: Client is required")
	case r.Clock == nil:
		return errors.New("simulated networking: Clock is required")
	}
	if r.CIDR == "" {
		r.CIDR = DefaultCIDR
	}
	if r.SubnetPrefixLength == 0 {
		r.SubnetPrefixLength = DefaultSubnetPrefixLength
	}
	var err error
	if r.pool, err = newPool(r.CIDR, r.SubnetPrefixLength); err != nil {
		return fmt.Errorf("simulated networking: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&networkingv1alpha.NetworkBinding{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(r)
}

// Reconcile attaches one NetworkBinding, or frees the address of one that
// is gone.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if err := r.seed(ctx); err != nil {
		return ctrl.Result{}, err
	}
	b := &networkingv1alpha.NetworkBinding{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			r.pool.release(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.DeletionTimestamp != nil {
		r.pool.release(req.String())
		return ctrl.Result{}, nil
	}
	city := b.Spec.Topology[networkingv1alpha.CityCodeTopologyKey]
	if city == "" {
		return ctrl.Result{}, r.report(ctx, b, nil, nil, refusal(networkingv1alpha.NetworkBindingReasonInvalidTopology,
			fmt.Sprintf("spec.topology has no %s key: the binding must name the city the network is needed in", networkingv1alpha.CityCodeTopologyKey)))
	}
	netNS := b.Spec.Network.Namespace
	if netNS == b.Namespace {
		netNS = ""
	}
	ctxName := names.NetworkContextName(netNS, b.Spec.Network.Name, city)
	key := b.Namespace + "/" + ctxName
	if err := r.ensureContext(ctx, b, ctxName, city); err != nil {
		return ctrl.Result{}, err
	}
	subnet, err := r.pool.subnet(key)
	if errors.Is(err, errExhausted) {
		return ctrl.Result{RequeueAfter: RetryAfter}, r.report(ctx, b, nil, nil, refusal(networkingv1alpha.NetworkBindingReasonAddressPoolExhausted,
			fmt.Sprintf("the address pool %s of %s has no room for a /%d subnet of network %s: its %d subnets are taken; use a larger pool (--simulated-network-cidr) or smaller subnets (--simulated-network-subnet-prefix)",
				r.pool.prefix, city, r.pool.bits, b.Spec.Network.Name, r.pool.subnetCount())))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensureSubnet(ctx, b.Namespace, ctxName, subnet, city); err != nil {
		return ctrl.Result{}, err
	}
	addr, err := r.pool.assign(req.String(), key)
	if errors.Is(err, errExhausted) {
		return ctrl.Result{RequeueAfter: RetryAfter}, r.report(ctx, b, nil, nil, refusal(networkingv1alpha.NetworkBindingReasonSubnetExhausted,
			fmt.Sprintf("subnet %s (%s) of network %s in %s has no free address: all %d are assigned; delete instances on this network or use a larger subnet (--simulated-network-subnet-prefix)",
				ctxName, subnet, b.Spec.Network.Name, city, hosts(subnet))))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	ref := &networkingv1alpha.NetworkContextRef{Namespace: b.Namespace, Name: ctxName}
	addrs := []networkingv1alpha.NetworkBindingAddress{{
		Family: networkingv1alpha.IPv4Protocol, Address: addr.String(), Gateway: gateway(subnet).String(), Subnet: ctxName,
	}}
	ready := metav1.Condition{
		Type: networkingv1alpha.NetworkBindingConditionReady, Status: metav1.ConditionTrue, Reason: networkingv1alpha.NetworkBindingReasonBound,
		Message: fmt.Sprintf("attached to network context %s; address %s in subnet %s", ctxName, addr, subnet),
	}
	return ctrl.Result{}, r.report(ctx, b, ref, addrs, ready)
}

// refusal is a Ready=False condition.
func refusal(reason, msg string) metav1.Condition {
	return metav1.Condition{Type: networkingv1alpha.NetworkBindingConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
}

// seed reads, once, the Subnets and the bound addresses that exist, so a
// restart hands nothing out twice.
func (r *Reconciler) seed(ctx context.Context) error {
	if r.seeded {
		return nil
	}
	subnets := &networkingv1alpha.SubnetList{}
	if err := r.Client.List(ctx, subnets); err != nil {
		return fmt.Errorf("failed to list Subnets to recover the allocations: %w", err)
	}
	for _, s := range subnets.Items {
		a, err := netip.ParseAddr(s.Spec.StartAddress)
		if err != nil || !r.pool.prefix.Contains(a) {
			continue
		}
		r.pool.observeSubnet(s.Namespace+"/"+s.Spec.NetworkContext.Name, netip.PrefixFrom(a, int(s.Spec.PrefixLength)))
	}
	bindings := &networkingv1alpha.NetworkBindingList{}
	if err := r.Client.List(ctx, bindings); err != nil {
		return fmt.Errorf("failed to list NetworkBindings to recover the addresses: %w", err)
	}
	for _, b := range bindings.Items {
		if b.Status.NetworkContextRef == nil || len(b.Status.Addresses) == 0 {
			continue
		}
		a, err := netip.ParseAddr(b.Status.Addresses[0].Address)
		if err != nil {
			continue
		}
		r.pool.observe(b.Namespace+"/"+b.Name, b.Namespace+"/"+b.Status.NetworkContextRef.Name, a)
	}
	r.seeded = true
	return nil
}

// location returns the Location recorded on SubnetClaims and Subnets.
func (r *Reconciler) location(ns, city string) networkingv1alpha.LocationReference {
	if r.Location != nil {
		return *r.Location
	}
	return networkingv1alpha.LocationReference{Namespace: ns, Name: strings.ToLower(city)}
}

// ensureContext creates the network's NetworkContext for the city when it
// is missing and reports it Ready.
func (r *Reconciler) ensureContext(ctx context.Context, b *networkingv1alpha.NetworkBinding, name, city string) error {
	nc := &networkingv1alpha.NetworkContext{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: name}, nc)
	if apierrors.IsNotFound(err) {
		nc = &networkingv1alpha.NetworkContext{
			ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: name},
			Spec: networkingv1alpha.NetworkContextSpec{
				Network:  networkingv1alpha.LocalNetworkRef{Name: b.Spec.Network.Name},
				Topology: map[string]string{networkingv1alpha.CityCodeTopologyKey: city},
			},
		}
		err = r.Client.Create(ctx, nc)
		if apierrors.IsAlreadyExists(err) {
			// The cache had not seen it yet; it is Ready already or the
			// next reconcile finds it.
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("failed to ensure NetworkContext %s: %w", name, err)
	}
	return r.setReady(ctx, nc, &nc.Status.Conditions, nc.Generation, networkingv1alpha.NetworkContextConditionReady,
		fmt.Sprintf("network %s is present in %s", b.Spec.Network.Name, city), false)
}

// ensureSubnet creates the SubnetClaim of a network context and the Subnet
// allocated to it when they are missing, and reports both Ready.
func (r *Reconciler) ensureSubnet(ctx context.Context, ns, name string, prefix netip.Prefix, city string) error {
	start, bits := prefix.Addr().String(), int32(prefix.Bits())
	key := types.NamespacedName{Namespace: ns, Name: name}
	claim := &networkingv1alpha.SubnetClaim{}
	lost, err := r.getOrCreate(ctx, key, claim, func() {
		*claim = networkingv1alpha.SubnetClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: networkingv1alpha.SubnetClaimSpec{
				SubnetClass: SubnetClass, NetworkContext: networkingv1alpha.LocalNetworkContextRef{Name: name},
				Location: r.location(ns, city), IPFamily: networkingv1alpha.IPv4Protocol,
			},
		}
	})
	if err != nil {
		return fmt.Errorf("failed to ensure SubnetClaim %s: %w", name, err)
	}
	if lost {
		return nil
	}
	subnet := &networkingv1alpha.Subnet{}
	lost, err = r.getOrCreate(ctx, key, subnet, func() {
		*subnet = networkingv1alpha.Subnet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: networkingv1alpha.SubnetSpec{
				SubnetClass: SubnetClass, NetworkContext: networkingv1alpha.LocalNetworkContextRef{Name: name},
				Location: r.location(ns, city), IPFamily: networkingv1alpha.IPv4Protocol,
				StartAddress: start, PrefixLength: bits,
			},
		}
	})
	if err != nil {
		return fmt.Errorf("failed to ensure Subnet %s: %w", name, err)
	}
	if lost {
		return nil
	}
	first := subnet.Status.StartAddress == nil
	if first {
		subnet.Status.StartAddress, subnet.Status.PrefixLength = ptr.To(start), ptr.To(bits)
		for _, t := range []string{networkingv1alpha.SubnetConditionAllocated, networkingv1alpha.SubnetConditionProgrammed} {
			meta.SetStatusCondition(&subnet.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, ObservedGeneration: subnet.Generation,
				LastTransitionTime: metav1.NewTime(r.Clock.Now())})
		}
	}
	if err := r.setReady(ctx, subnet, &subnet.Status.Conditions, subnet.Generation, networkingv1alpha.SubnetConditionReady,
		fmt.Sprintf("%s is programmed in %s", prefix, city), first); err != nil {
		return err
	}
	first = claim.Status.SubnetRef == nil
	if first {
		claim.Status.SubnetRef = &networkingv1alpha.LocalSubnetReference{Name: name}
		claim.Status.StartAddress, claim.Status.PrefixLength = ptr.To(start), ptr.To(bits)
		meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{Type: networkingv1alpha.SubnetConditionAllocated, Status: metav1.ConditionTrue,
			Reason: "PrefixAllocated", ObservedGeneration: claim.Generation, LastTransitionTime: metav1.NewTime(r.Clock.Now())})
	}
	return r.setReady(ctx, claim, &claim.Status.Conditions, claim.Generation, networkingv1alpha.SubnetConditionReady,
		fmt.Sprintf("subnet %s (%s) is allocated", name, prefix), first)
}

// getOrCreate reads the object at key into obj or, when there is none,
// creates the one build writes into obj. lost reports that another writer
// created it first: its event brings the network context back.
func (r *Reconciler) getOrCreate(ctx context.Context, key types.NamespacedName, obj client.Object, build func()) (lost bool, err error) {
	err = r.Client.Get(ctx, key, obj)
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	build()
	if err = r.Client.Create(ctx, obj); apierrors.IsAlreadyExists(err) {
		return true, nil
	}
	return false, err
}

// setReady sets a Ready=True condition on obj's conditions and writes its
// status when anything changed (changed: the caller changed other status
// fields).
func (r *Reconciler) setReady(ctx context.Context, obj client.Object, conds *[]metav1.Condition, gen int64, typ, msg string, changed bool) error {
	before := append([]metav1.Condition(nil), (*conds)...)
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Ready", Message: msg,
		ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(r.Clock.Now())})
	if !changed && equality.Semantic.DeepEqual(before, *conds) {
		return nil
	}
	if err := r.Client.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("failed to report %T %s ready: %w", obj, obj.GetName(), err)
	}
	return nil
}

// report writes the binding's status when it changed.
func (r *Reconciler) report(ctx context.Context, b *networkingv1alpha.NetworkBinding, ref *networkingv1alpha.NetworkContextRef,
	addrs []networkingv1alpha.NetworkBindingAddress, ready metav1.Condition) error {
	want := b.DeepCopy()
	want.Status.NetworkContextRef, want.Status.Addresses = ref, addrs
	ready.ObservedGeneration = b.Generation
	ready.LastTransitionTime = metav1.NewTime(r.Clock.Now())
	meta.SetStatusCondition(&want.Status.Conditions, ready)
	if equality.Semantic.DeepEqual(b.Status, want.Status) {
		return nil
	}
	if err := r.Client.Status().Update(ctx, want); err != nil {
		if apierrors.IsNotFound(err) {
			r.pool.release(client.ObjectKeyFromObject(b).String())
			return nil
		}
		return fmt.Errorf("failed to report NetworkBinding %s: %w", b.Name, err)
	}
	return nil
}
