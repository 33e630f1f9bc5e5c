// Package cell wires the cell role of compute-manager into a manager: the
// WorkloadDeployment and Instance controllers (Setup), the Instance
// write-back to the federation plane (SetupWriteBack), the Kubernetes
// runtime provider (SetupKubernetesProvider) and, for the local platform
// and tests, the simulated runtime provider (SetupSimulatedProvider) and
// networking stand-in (SetupSimulatedNetworking).
package cell

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/cellhealth"
	"github.com/citycells/compute/internal/controller/instance"
	"github.com/citycells/compute/internal/controller/workloaddeployment"
	"github.com/citycells/compute/internal/controller/writeback"
	"github.com/citycells/compute/internal/manager/hub"
	"github.com/citycells/compute/internal/provider/kubernetes"
	"github.com/citycells/compute/internal/standin/simnetwork"
	"github.com/citycells/compute/internal/standin/simprovider"
)

// Event reporting controllers: the component named in the events each
// controller emits.
const (
	// WorkloadDeploymentReporter reports events on WorkloadDeployments.
	WorkloadDeploymentReporter = "compute.datumapis.com/workloaddeployment-controller"
	// InstanceReporter reports events on Instances.
	InstanceReporter = "compute.datumapis.com/instance-controller"
)

// Options configure the cell controllers. The zero value is a cell without
// quota enforcement or networking integration.
type Options struct {
	// NetworkingIntegration is the NetworkingIntegration feature gate: new
	// Instances also get the Network scheduling gate, the Instance
	// controller binds each interface's network (a NetworkBinding per
	// interface), releases the gate once the bindings are Ready and records
	// their addresses. The cell needs the networking.datumapis.com CRDs and
	// the manager's scheme the networking types. Off, the Instance
	// controller removes Network gates left from a run with it on.
	NetworkingIntegration bool
	// Quota is the quota backend. Nil means none is configured: Instances
	// are admitted with QuotaGranted=True, reason QuotaDisabled.
	Quota instance.QuotaClient
	// Recorder emits the controllers' events; nil means a recorder of the
	// manager per controller.
	Recorder events.EventRecorder
	// Clock stamps conditions and measures ages; nil means the real clock.
	Clock clock.PassiveClock
	// WorkloadDeploymentConcurrency is the number of WorkloadDeployments
	// reconciled at once; zero means the controller's default.
	WorkloadDeploymentConcurrency int
	// InstanceConcurrency is the number of Instances reconciled at once;
	// zero means the controller's default.
	InstanceConcurrency int
	// Location is the Location the cell serves, recorded on its Instances
	// (spec.location) and WorkloadDeployments (status.location); nil
	// leaves both unset.
	Location *computev1alpha.LocationReference
}

// Setup registers the WorkloadDeployment and Instance controllers with mgr.
// mgr's scheme must know the compute API.
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := checkScheme(mgr); err != nil {
		return err
	}
	if opts.NetworkingIntegration {
		if err := checkNetworkingScheme(mgr); err != nil {
			return err
		}
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	// New Instances carry the Quota gate only when a quota backend could
	// hold them, and then also the compute finalizer the Instance
	// controller would otherwise add with a write of its own.
	var gates, finalizers []string
	if opts.Quota != nil {
		gates = append(gates, computev1alpha.QuotaSchedulingGate)
		finalizers = append(finalizers, computev1alpha.InstanceFinalizer)
	}
	if opts.NetworkingIntegration {
		gates = append(gates, computev1alpha.NetworkSchedulingGate)
	}
	wd := &workloaddeployment.Reconciler{
		Client:                  mgr.GetClient(),
		Recorder:                recorder(mgr, opts.Recorder, WorkloadDeploymentReporter),
		Clock:                   clk,
		SchedulingGates:         gates,
		Location:                opts.Location,
		Finalizers:              finalizers,
		MaxConcurrentReconciles: opts.WorkloadDeploymentConcurrency,
	}
	if err := wd.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the WorkloadDeployment controller: %w", err)
	}
	inst := &instance.Reconciler{
		Client:                  mgr.GetClient(),
		Recorder:                recorder(mgr, opts.Recorder, InstanceReporter),
		Clock:                   clk,
		Quota:                   opts.Quota,
		NetworkingIntegration:   opts.NetworkingIntegration,
		MaxConcurrentReconciles: opts.InstanceConcurrency,
	}
	if err := inst.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the Instance controller: %w", err)
	}
	return nil
}

// WriteBackOptions configure the Instance write-back. The zero value
// writes back without a heartbeat and caches every city's hub objects.
type WriteBackOptions struct {
	// CellName is the cell's Karmada Cluster name; when set, a heartbeat
	// tells the management plane this cell is heard from.
	CellName string
	// City is the city code the cell serves (its WorkloadDeployments'
	// spec.cityCode); when set, the cell caches only that city's
	// WorkloadDeployments and Instances of the federation plane
	// (hub.ForCity).
	City string
}

// SetupWriteBack registers the Instance write-back on mgr, the cell's
// manager, writing to the federation plane at hubConfig, and the
// heartbeat when opts name the cell.
func SetupWriteBack(mgr ctrl.Manager, hubConfig *rest.Config, opts WriteBackOptions) error {
	hubCluster, err := hub.AddCluster(mgr, hubConfig, hub.ForCity(opts.City))
	if err != nil {
		return err
	}
	if err := (&writeback.Reconciler{City: opts.City}).SetupWithManager(mgr, hubCluster); err != nil {
		return fmt.Errorf("failed to set up the Instance write-back: %w", err)
	}
	if opts.CellName == "" {
		return nil
	}
	if err := mgr.Add(&cellhealth.Heartbeat{Config: hubConfig, Name: opts.CellName}); err != nil {
		return fmt.Errorf("failed to add the cell heartbeat: %w", err)
	}
	return nil
}

// SimOptions configure the simulated runtime provider.
type SimOptions struct {
	// Delay is how long provisioning and teardown take; zero makes both
	// immediate.
	Delay time.Duration
	// CIDR is the cell's range of instance network addresses;
	// simprovider.DefaultCIDR when empty.
	CIDR string
	// ExternalCIDR is the range of external addresses; empty means none.
	ExternalCIDR string
	// Clock measures the delays; nil means the real clock.
	Clock clock.PassiveClock
	// Concurrency is the number of Instances handled at once; zero means
	// the provider's default.
	Concurrency int
	// AddressesFromNetwork leaves the Instances' addresses to the
	// networking integration (NetworkingIntegration on): the provider
	// assigns none.
	AddressesFromNetwork bool
}

// SetupSimulatedProvider registers the simulated runtime provider with mgr.
func SetupSimulatedProvider(mgr ctrl.Manager, opts SimOptions) error {
	if err := checkScheme(mgr); err != nil {
		return err
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	p := &simprovider.Reconciler{
		Client:                  mgr.GetClient(),
		Clock:                   clk,
		Delay:                   opts.Delay,
		CIDR:                    opts.CIDR,
		ExternalCIDR:            opts.ExternalCIDR,
		MaxConcurrentReconciles: opts.Concurrency,
		AddressesFromNetwork:    opts.AddressesFromNetwork,
	}
	if err := p.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the simulated provider: %w", err)
	}
	return nil
}

// KubeProviderOptions configure the Kubernetes runtime provider. The zero
// value is the provider's defaults.
type KubeProviderOptions struct {
	// Clock stamps conditions; nil means the real clock.
	Clock clock.PassiveClock
	// Concurrency is the number of Instances handled at once; zero means
	// the provider's default.
	Concurrency int
	// AddressesFromNetwork leaves the Instances' addresses to the
	// networking integration (NetworkingIntegration on): the provider
	// writes none.
	AddressesFromNetwork bool
	// RecheckAfter is how soon an Instance waiting for a ConfigMap or
	// Secret of the cell is looked at again; zero means
	// kubernetes.DefaultRecheckAfter.
	RecheckAfter time.Duration
	// AllocationRatio divides each container's requests (its limits stay
	// its size) so more instances fit on the nodes; zero or 1 makes
	// Guaranteed Pods (kubernetes.Reconciler.AllocationRatio).
	AllocationRatio float64
}

// SetupKubernetesProvider registers the Kubernetes runtime provider with
// mgr: each Instance of the cell runs as a Pod in mgr's cluster. mgr's
// scheme must know core/v1 and the compute API, and its cache should
// select Pods with kubernetes.CacheByObject (or it caches every Pod of the
// cell).
func SetupKubernetesProvider(mgr ctrl.Manager, opts KubeProviderOptions) error {
	if err := checkScheme(mgr); err != nil {
		return err
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	p := &kubernetes.Reconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Clock:                   clk,
		MaxConcurrentReconciles: opts.Concurrency,
		AddressesFromNetwork:    opts.AddressesFromNetwork,
		RecheckAfter:            opts.RecheckAfter,
		AllocationRatio:         opts.AllocationRatio,
	}
	if err := p.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the Kubernetes runtime provider: %w", err)
	}
	return nil
}

// NetOptions configure the networking stand-in.
type NetOptions struct {
	// CIDR is the city's IPv4 address pool; simnetwork.DefaultCIDR when
	// empty.
	CIDR string
	// SubnetPrefixLength is the size of each network's subnet in the city;
	// simnetwork.DefaultSubnetPrefixLength when zero.
	SubnetPrefixLength int
	// Location is the Location the cell serves, recorded on SubnetClaims
	// and Subnets; nil records the city.
	Location *computev1alpha.LocationReference
	// Clock stamps conditions; nil means the real clock.
	Clock clock.PassiveClock
}

// SetupSimulatedNetworking registers the networking stand-in (the local
// platform's and the tests' replacement for Datum's networking service)
// with mgr. The cell needs the networking.datumapis.com CRDs.
func SetupSimulatedNetworking(mgr ctrl.Manager, opts NetOptions) error {
	if err := checkNetworkingScheme(mgr); err != nil {
		return err
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	r := &simnetwork.Reconciler{
		Client:             mgr.GetClient(),
		Clock:              clk,
		CIDR:               opts.CIDR,
		SubnetPrefixLength: opts.SubnetPrefixLength,
	}
	if opts.Location != nil {
		r.Location = &networkingv1alpha.LocationReference{Namespace: opts.Location.Namespace, Name: opts.Location.Name}
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the simulated networking: %w", err)
	}
	return nil
}

// recorder returns r, or a recorder of mgr reporting as name.
func recorder(mgr ctrl.Manager, r events.EventRecorder, name string) events.EventRecorder {
	if r != nil {
		return r
	}
	return mgr.GetEventRecorder(name)
}

// checkNetworkingScheme fails early, with the fix, when the manager cannot
// encode the networking contract.
func checkNetworkingScheme(mgr ctrl.Manager) error {
	if !mgr.GetScheme().Recognizes(networkingv1alpha.GroupVersion.WithKind(networkingv1alpha.NetworkBindingKind)) {
		return errors.New("the manager's scheme does not know networking.datumapis.com/v1alpha: add networkingv1alpha.AddToScheme to it")
	}
	return nil
}

// checkScheme fails early, with the fix, when the manager cannot encode
// the compute API.
func checkScheme(mgr ctrl.Manager) error {
	if !mgr.GetScheme().Recognizes(computev1alpha.GroupVersion.WithKind(computev1alpha.InstanceKind)) {
		return errors.New("the manager's scheme does not know compute.datumapis.com/v1alpha: add computev1alpha.AddToScheme to it")
	}
	return nil
}
