// Package cell wires the cell role of compute-manager into a manager with
// one call, Setup, whose Options say what runs: the WorkloadDeployment,
// Instance and autoscaler controllers, the Instance write-back to the
// federation plane, a runtime provider (the Kubernetes one or, for the
// local platform and tests, the simulated one) and the networking
// stand-in.
package cell

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/autoscaler"
	"github.com/citycells/compute/internal/controller/cellhealth"
	"github.com/citycells/compute/internal/controller/instance"
	"github.com/citycells/compute/internal/controller/podevents"
	"github.com/citycells/compute/internal/controller/workloaddeployment"
	"github.com/citycells/compute/internal/controller/writeback"
	"github.com/citycells/compute/internal/manager/hub"
	"github.com/citycells/compute/internal/provider/kubernetes"
	"github.com/citycells/compute/internal/referenceddata/cellcompanions"
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

// Options say what runs in the cell, in the style of Kueue's
// SetupControllers: one call wires every part, and each part is optional
// (nil runs none of it), so the zero value registers nothing.
type Options struct {
	// Controllers runs the WorkloadDeployment and Instance controllers,
	// the cell role proper; nil runs neither (a manager that only runs a
	// provider, or a test of the write-back alone).
	Controllers *ControllerOptions
	// WriteBack runs the Instance write-back to the federation plane and,
	// when it names the cell, the heartbeat; nil leaves the cell's
	// Instances unprojected.
	WriteBack *WriteBackOptions
	// Provider is the runtime provider that runs the cell's Instances:
	// SimulatedProvider or KubernetesProvider; nil runs none.
	Provider Provider
	// Networking runs the networking stand-in (the local platform's and
	// the tests' replacement for Datum's networking service); nil runs
	// none. The cell needs the networking.datumapis.com CRDs.
	Networking *NetOptions

	// NetworkingIntegration is the NetworkingIntegration feature gate: new
	// Instances also get the Network scheduling gate, the Instance
	// controller binds each interface's network (a NetworkBinding per
	// interface), releases the gate once the bindings are Ready and records
	// their addresses, and the provider leaves the addresses to the
	// networks. The cell needs the networking.datumapis.com CRDs and the
	// manager's scheme the networking types. Off, the Instance controller
	// removes Network gates left from a run with it on.
	NetworkingIntegration bool
	// Location is the Location the cell serves, recorded on its Instances
	// (spec.location), WorkloadDeployments (status.location) and, by the
	// networking stand-in, on SubnetClaims and Subnets; nil leaves the
	// first two unset and makes the stand-in record the city.
	Location *computev1alpha.LocationReference
	// Clock stamps conditions and measures ages and delays in every part;
	// nil means the real clock.
	Clock clock.PassiveClock

	// companions is the cache of the cell's referenced-data companions,
	// shared by the Instance controller (its ReferencedData gate) and the
	// simulated provider; Setup makes it when either runs.
	companions cache.Cache
}

// ControllerOptions configure the cell controllers. The zero value is a
// cell without quota enforcement.
type ControllerOptions struct {
	// Quota is the quota backend. Nil means none is configured: Instances
	// are admitted with QuotaGranted=True, reason QuotaDisabled.
	Quota instance.QuotaClient
	// Recorder emits the controllers' events; nil means a recorder of the
	// manager per controller.
	Recorder events.EventRecorder
	// WorkloadDeploymentConcurrency is the number of WorkloadDeployments
	// reconciled at once; zero means the controller's default.
	WorkloadDeploymentConcurrency int
	// InstanceConcurrency is the number of Instances reconciled at once;
	// zero means the controller's default.
	InstanceConcurrency int
	// MetricsAPI tells the autoscaler controller whether the cell serves
	// the resource metrics API; nil means asking the cell's discovery
	// (autoscaler.Discovery), an answer kept for 30 s.
	MetricsAPI autoscaler.MetricsAPI
}

// WriteBackOptions configure the Instance write-back. Without CellName and
// City it writes back without a heartbeat and caches every city's hub
// objects.
type WriteBackOptions struct {
	// Config is the client configuration of the federation plane the
	// write-back writes to (--federation-kubeconfig).
	Config *rest.Config
	// CellName is the cell's Karmada Cluster name; when set, a heartbeat
	// tells the management plane this cell is heard from.
	CellName string
	// City is the city code the cell serves (its WorkloadDeployments'
	// spec.cityCode); when set, the cell caches only that city's
	// WorkloadDeployments and Instances of the federation plane
	// (hub.ForCity).
	City string
}

// Provider is a runtime provider the cell can run: SimulatedProvider or
// KubernetesProvider.
type Provider interface {
	// setup registers the provider with mgr; shared are the cell's
	// options (its clock and networking integration).
	setup(mgr ctrl.Manager, shared *Options) error
}

// SimulatedProvider is the simulated runtime provider (the local platform
// and tests): Instances become Ready after Delay, with addresses from
// CIDR.
type SimulatedProvider struct {
	// Delay is how long provisioning and teardown take; zero makes both
	// immediate.
	Delay time.Duration
	// CIDR is the cell's range of instance network addresses;
	// simprovider.DefaultCIDR when empty.
	CIDR string
	// ExternalCIDR is the range of external addresses; empty means none.
	ExternalCIDR string
	// Concurrency is the number of Instances handled at once; zero means
	// the provider's default.
	Concurrency int
}

// KubernetesProvider is the Kubernetes runtime provider: each Instance of
// the cell runs as a Pod in the manager's cluster. The manager's scheme
// must know core/v1, and its cache should select Pods with
// kubernetes.CacheByObject (or it caches every Pod of the cell). The zero
// value is the provider's defaults.
type KubernetesProvider struct {
	// Concurrency is the number of Instances handled at once; zero means
	// the provider's default.
	Concurrency int
	// RecheckAfter is how soon an Instance waiting for a ConfigMap or
	// Secret of the cell is looked at again; zero means
	// kubernetes.DefaultRecheckAfter.
	RecheckAfter time.Duration
	// AllocationRatio divides each container's requests (its limits stay
	// its size) so more instances fit on the nodes; zero or 1 makes
	// Guaranteed Pods (kubernetes.Reconciler.AllocationRatio).
	AllocationRatio float64
	// NetworkPolicyEnforcement says whether the cell enforces the
	// provider's NetworkPolicies; empty means kubernetes.EnforcementNone
	// (kubernetes.Reconciler.NetworkPolicyEnforcement).
	NetworkPolicyEnforcement kubernetes.NetworkPolicyEnforcement
}

// NetOptions configure the networking stand-in.
type NetOptions struct {
	// CIDR is the city's IPv4 address pool; simnetwork.DefaultCIDR when
	// empty.
	CIDR string
	// SubnetPrefixLength is the size of each network's subnet in the city;
	// simnetwork.DefaultSubnetPrefixLength when zero.
	SubnetPrefixLength int
}

// Setup registers with mgr the parts of the cell opts name: the cell
// controllers, the Instance write-back, a runtime provider and the
// networking stand-in. mgr's scheme must know the compute API when the
// controllers or a provider run, and the networking API when the
// networking integration or the stand-in does.
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := opts.checkScheme(mgr); err != nil {
		return err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if err := opts.setupCompanions(mgr); err != nil {
		return err
	}
	if opts.Controllers != nil {
		if err := setupControllers(mgr, &opts, opts.Controllers); err != nil {
			return err
		}
	}
	if opts.WriteBack != nil {
		_, pods := opts.Provider.(KubernetesProvider)
		if err := setupWriteBack(mgr, opts.WriteBack, pods); err != nil {
			return err
		}
	}
	if opts.Provider != nil {
		if err := opts.Provider.setup(mgr, &opts); err != nil {
			return err
		}
	}
	if opts.Networking != nil {
		if err := setupNetworking(mgr, &opts, opts.Networking); err != nil {
			return err
		}
	}
	return nil
}

// checkScheme fails early, with the fix, when mgr's scheme lacks an API a
// part of the cell needs.
func (o *Options) checkScheme(mgr ctrl.Manager) error {
	if o.Controllers != nil || o.Provider != nil {
		if err := checkComputeScheme(mgr); err != nil {
			return err
		}
	}
	if (o.Controllers != nil && o.NetworkingIntegration) || o.Networking != nil {
		return checkNetworkingScheme(mgr)
	}
	return nil
}

// setupCompanions makes the cache of the cell's referenced-data companions
// (the metadata of labelled ConfigMaps and Secrets only, never every Secret
// of the cell) when a part that reads it runs, and adds it to mgr so it
// starts and syncs with the manager's caches.
func (o *Options) setupCompanions(mgr ctrl.Manager) error {
	_, simulated := o.Provider.(SimulatedProvider)
	if o.Controllers == nil && !simulated {
		return nil
	}
	c, err := cellcompanions.NewCache(mgr.GetConfig(), mgr.GetScheme(), mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("failed to add the cache of referenced-data companions: %w", err)
	}
	o.companions = c
	return nil
}

// setupControllers registers the WorkloadDeployment and Instance
// controllers.
func setupControllers(mgr ctrl.Manager, shared *Options, opts *ControllerOptions) error {
	// New Instances carry the Quota gate only when a quota backend could
	// hold them, and then also the compute finalizer the Instance
	// controller would otherwise add with a write of its own.
	var gates, finalizers []string
	if opts.Quota != nil {
		gates = append(gates, computev1alpha.QuotaSchedulingGate)
		finalizers = append(finalizers, computev1alpha.InstanceFinalizer)
	}
	if shared.NetworkingIntegration {
		gates = append(gates, computev1alpha.NetworkSchedulingGate)
	}
	wd := &workloaddeployment.Reconciler{
		Client:                  mgr.GetClient(),
		Recorder:                recorder(mgr, opts.Recorder, WorkloadDeploymentReporter),
		Clock:                   shared.Clock,
		SchedulingGates:         gates,
		Location:                shared.Location,
		Finalizers:              finalizers,
		MaxConcurrentReconciles: opts.WorkloadDeploymentConcurrency,
	}
	if err := wd.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the WorkloadDeployment controller: %w", err)
	}
	inst := &instance.Reconciler{
		Client:                  mgr.GetClient(),
		Recorder:                recorder(mgr, opts.Recorder, InstanceReporter),
		Clock:                   shared.Clock,
		Quota:                   opts.Quota,
		NetworkingIntegration:   shared.NetworkingIntegration,
		Companions:              shared.companions,
		MaxConcurrentReconciles: opts.InstanceConcurrency,
	}
	if err := inst.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the Instance controller: %w", err)
	}
	return setupAutoscaler(mgr, shared, opts)
}

// setupAutoscaler registers the autoscaler controller: one
// HorizontalPodAutoscaler per autoscaling WorkloadDeployment, while the
// cell serves the resource metrics API.
func setupAutoscaler(mgr ctrl.Manager, shared *Options, opts *ControllerOptions) error {
	metrics := opts.MetricsAPI
	if metrics == nil {
		dc, err := discovery.NewDiscoveryClientForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
		if err != nil {
			return fmt.Errorf("failed to create the discovery client of the metrics API: %w", err)
		}
		metrics = &autoscaler.Discovery{Client: dc, Clock: shared.Clock}
	}
	as := &autoscaler.Reconciler{Client: mgr.GetClient(), Metrics: metrics, Clock: shared.Clock}
	if err := as.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the autoscaler controller: %w", err)
	}
	return nil
}

// setupWriteBack registers the Instance write-back, writing to the
// federation plane at opts.Config, the forwarder of the Instances' Pod
// events when pods (the Kubernetes provider runs them), and the heartbeat
// when opts name the cell.
func setupWriteBack(mgr ctrl.Manager, opts *WriteBackOptions, pods bool) error {
	hubCluster, err := hub.AddCluster(mgr, opts.Config, hub.ForCity(opts.City))
	if err != nil {
		return err
	}
	if err := (&writeback.Reconciler{City: opts.City}).SetupWithManager(mgr, hubCluster); err != nil {
		return fmt.Errorf("failed to set up the Instance write-back: %w", err)
	}
	if pods {
		if err := (&podevents.Reconciler{City: opts.City}).SetupWithManager(context.Background(), mgr, hubCluster); err != nil {
			return fmt.Errorf("failed to set up the Pod event forwarder: %w", err)
		}
	}
	if opts.CellName == "" {
		return nil
	}
	if err := mgr.Add(&cellhealth.Heartbeat{Config: opts.Config, Cell: mgr.GetConfig(), Name: opts.CellName}); err != nil {
		return fmt.Errorf("failed to add the cell heartbeat: %w", err)
	}
	return nil
}

// setup registers the simulated runtime provider.
func (p SimulatedProvider) setup(mgr ctrl.Manager, shared *Options) error {
	r := &simprovider.Reconciler{
		Client:                  mgr.GetClient(),
		Companions:              shared.companions,
		Clock:                   shared.Clock,
		Delay:                   p.Delay,
		CIDR:                    p.CIDR,
		ExternalCIDR:            p.ExternalCIDR,
		MaxConcurrentReconciles: p.Concurrency,
		AddressesFromNetwork:    shared.NetworkingIntegration,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the simulated provider: %w", err)
	}
	return nil
}

// setup registers the Kubernetes runtime provider.
func (p KubernetesProvider) setup(mgr ctrl.Manager, shared *Options) error {
	r := &kubernetes.Reconciler{
		Client:                   mgr.GetClient(),
		APIReader:                mgr.GetAPIReader(),
		Clock:                    shared.Clock,
		MaxConcurrentReconciles:  p.Concurrency,
		AddressesFromNetwork:     shared.NetworkingIntegration,
		RecheckAfter:             p.RecheckAfter,
		AllocationRatio:          p.AllocationRatio,
		NetworkPolicyEnforcement: p.NetworkPolicyEnforcement,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the Kubernetes runtime provider: %w", err)
	}
	return nil
}

// setupNetworking registers the networking stand-in.
func setupNetworking(mgr ctrl.Manager, shared *Options, opts *NetOptions) error {
	r := &simnetwork.Reconciler{
		Client:             mgr.GetClient(),
		Clock:              shared.Clock,
		CIDR:               opts.CIDR,
		SubnetPrefixLength: opts.SubnetPrefixLength,
	}
	if l := shared.Location; l != nil {
		r.Location = &networkingv1alpha.LocationReference{Namespace: l.Namespace, Name: l.Name}
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

// checkComputeScheme fails early, with the fix, when the manager cannot
// encode the compute API.
func checkComputeScheme(mgr ctrl.Manager) error {
	if !mgr.GetScheme().Recognizes(computev1alpha.GroupVersion.WithKind(computev1alpha.InstanceKind)) {
		return errors.New("the manager's scheme does not know compute.datumapis.com/v1alpha: add computev1alpha.AddToScheme to it")
	}
	return nil
}
