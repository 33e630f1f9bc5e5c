package clitest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/apitest"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/manager/cell"
	"github.com/citycells/compute/internal/manager/management"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/quota"
	"github.com/citycells/compute/internal/standin/quotaservice"
	"github.com/citycells/compute/internal/standin/simprovider"
)

// LivePlane is the plane where the real controllers run (StartControllers):
// the commands of a Live harness see statuses the controllers wrote, not
// the stand-in's.
const LivePlane = "live"

// ProviderDelay is how long the simulated provider takes to start or stop
// an instance on the live plane: long enough that a wait shows progress.
const ProviderDelay = time.Second

// liveCell is the cell name on the quota claims of the live plane.
const liveCell = "cli-cell"

// liveCaches are what the controllers of the live plane read (their
// managers' caches): NewLive waits until they show a new project's
// bindings and grant, so that no controller judges a workload against a
// project it has not fully seen (a city "not enabled", an instance denied
// quota), which would make a test's outcome a race.
var liveCaches struct{ controllers, quota client.Reader }

// StartControllers runs on plane p what compute runs in production, in
// this process:
//
//   - compute-manager's management and cell roles in one manager, as
//     `compute-manager --enable-management-controllers
//     --enable-cell-controllers` wires them (internal/manager.Run): the
//     Workload and references controllers, the WorkloadDeployment and
//     Instance controllers;
//   - the cell's quota client (internal/quota) claiming every Instance in
//     the plane, and compute-quota's quota service
//     (internal/standin/quotaservice) granting or denying the claims
//     against each project's grant, as Milo's quota system does;
//   - the simulated runtime provider (internal/standin/simprovider) in place of a
//     real one, with ProviderDelay.
//
// What is not run: Karmada and a separate cell plane. The cell controllers
// act on the WorkloadDeployments in the project plane itself, so the
// propagation to a cell and the Instance write-back and projection are
// not exercised here (test/e2e does, on the local platform). The admission
// webhooks are off: the CLI validates and defaults client-side, and the
// server dry-run tests run on the project plane.
//
// stop ends both managers and returns their errors.
func StartControllers(p *planes.Plane, dir string) (stop func() error, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	scheme := management.NewScheme()
	if err := quotav1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	mopts := management.NewOptions()
	mopts.Webhook.Disabled = true
	mopts.Manager = ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	role, err := management.Setup(p.Config(), mopts)
	if err != nil {
		return nil, err
	}
	mgr := role.Manager().GetLocalManager()

	// The quota plane of every project is this plane (the kubeconfig's
	// current context serves any project).
	quotaKubeconfig := filepath.Join(dir, "live-quota.kubeconfig")
	if err := os.WriteFile(quotaKubeconfig, p.KubeconfigBytes(), 0o600); err != nil {
		return nil, err
	}
	quotaPlanes, err := quota.LoadPlanes(quotaKubeconfig, false)
	if err != nil {
		return nil, err
	}
	quotaClient, err := quota.NewClient(quota.Options{SourceCluster: liveCell, Reader: mgr.GetAPIReader(), Planes: quotaPlanes})
	if err != nil {
		return nil, err
	}
	if err := cell.Setup(mgr, cell.Options{
		Controllers: &cell.ControllerOptions{Quota: quotaClient},
		Provider:    cell.SimulatedProvider{Delay: ProviderDelay, ExternalCIDR: "203.0.113.0/24"},
	}); err != nil {
		return nil, err
	}
	quotaMgr, err := quotaservice.NewManager(ctx, p.Config(), manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}, quotaservice.Options{})
	if err != nil {
		return nil, err
	}
	liveCaches.controllers, liveCaches.quota = mgr.GetCache(), quotaMgr.GetCache()
	done := make(chan error, 2)
	go func() { done <- role.Start(ctx) }()
	go func() { done <- quotaMgr.Start(ctx) }()
	return func() error {
		cancel()
		var errs []error
		for range 2 {
			if err := <-done; err != nil && !strings.Contains(err.Error(), "failed waiting for all runnables to end within grace period") {
				// (controller-runtime v0.23.1's priority queue can hang on
				// shutdown, kubernetes-sigs/controller-runtime#3538: a
				// manager that stops late fails no test.)
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}, nil
}

// Grant is a project's quota: what compute-quota grants its instances.
type Grant struct {
	// Instances is how many instances may exist.
	Instances int64
	// VCPUs and Memory are quantities ("8", "16Gi").
	VCPUs, Memory string
}

// Plenty is a grant no test reaches.
var Plenty = Grant{Instances: 100, VCPUs: "400", Memory: "800Gi"}

// NewLive returns a harness on the live plane, where the real controllers
// run (StartControllers): a namespace of its own that is a project of its
// own — labelled as Karmada labels a cell namespace, so the cell's quota
// client claims its instances from the project, with grant as the
// project's quota — bound to DFW, LHR and SIN. Commands run with --project
// set to the project, as under datumctl.
func NewLive(t testing.TB, env *planes.Environment, grant Grant) *Harness {
	t.Helper()
	h := New(t, env, LivePlane)
	h.Project = h.Namespace
	ctx := context.Background()
	var ns corev1.Namespace
	if err := h.Client.Get(ctx, client.ObjectKey{Name: h.Namespace}, &ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels = map[string]string{
		computev1alpha.UpstreamClusterNameLabel: names.UpstreamClusterName(h.Project),
		computev1alpha.UpstreamNamespaceLabel:   h.Namespace,
	}
	if err := h.Client.Update(ctx, &ns); err != nil {
		t.Fatal(err)
	}
	h.SetGrant(grant)
	h.BindCities("DFW", "LHR", "SIN")
	h.Eventually("the controllers see the project's cities and grant", func(ctx context.Context) error {
		if liveCaches.controllers == nil {
			return errors.New("the controllers are not running (StartControllers)")
		}
		var bindings networkingv1alpha.LocationBindingList
		if err := liveCaches.controllers.List(ctx, &bindings, client.InNamespace(h.Namespace)); err != nil {
			return err
		}
		if len(bindings.Items) != 3 {
			return fmt.Errorf("%d of 3 location bindings", len(bindings.Items))
		}
		var grants quotav1alpha1.ResourceGrantList
		if err := liveCaches.quota.List(ctx, &grants, client.InNamespace(h.Namespace)); err != nil {
			return err
		}
		if len(grants.Items) == 0 {
			return errors.New("no resource grant")
		}
		return nil
	})
	return h
}

// SetGrant creates or changes the project's grant.
func (h *Harness) SetGrant(g Grant) {
	h.T.Helper()
	amounts, err := quotaservice.ComputeGrant(g.Instances, g.VCPUs, g.Memory)
	if err != nil {
		h.T.Fatal(err)
	}
	want := quotaservice.DefaultGrantFor(h.Project, "compute", h.Namespace, amounts)
	ctx := context.Background()
	var have quotav1alpha1.ResourceGrant
	switch err := h.Client.Get(ctx, client.ObjectKeyFromObject(want), &have); {
	case err == nil:
		have.Spec = want.Spec
		err = h.Client.Update(ctx, &have)
		if err != nil {
			h.T.Fatal(err)
		}
	case client.IgnoreNotFound(err) == nil:
		if err := h.Client.Create(ctx, want); err != nil {
			h.T.Fatal(err)
		}
	default:
		h.T.Fatal(err)
	}
}

// Settle is how long Eventually waits for the controllers on the live
// plane.
const Settle = time.Minute

// Eventually polls check until it returns nil, failing the test with its
// last error after Settle (or h.Patience when set).
func (h *Harness) Eventually(what string, check func(ctx context.Context) error) {
	h.T.Helper()
	settle := cmp.Or(h.Patience, Settle)
	deadline := time.Now().Add(settle)
	for {
		err := check(context.Background())
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			h.T.Fatalf("%s: not after %s: %v", what, settle, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Instances lists the instances of workload name by city, each city's in
// ordinal order.
func (h *Harness) Instances(ctx context.Context, name string) (map[string][]computev1alpha.Instance, error) {
	var list computev1alpha.InstanceList
	if err := h.Client.List(ctx, &list, client.InNamespace(h.Namespace), client.MatchingLabels{computev1alpha.WorkloadNameLabel: name}); err != nil {
		return nil, err
	}
	out := map[string][]computev1alpha.Instance{}
	for _, inst := range list.Items {
		out[inst.Labels[computev1alpha.CityCodeLabel]] = append(out[inst.Labels[computev1alpha.CityCodeLabel]], inst)
	}
	ordinal := func(inst computev1alpha.Instance) int {
		n, _ := strconv.Atoi(inst.Labels[computev1alpha.InstanceIndexLabel])
		return n
	}
	for _, insts := range out {
		slices.SortFunc(insts, func(a, b computev1alpha.Instance) int { return cmp.Compare(ordinal(a), ordinal(b)) })
	}
	return out, nil
}

// WaitRolledOut waits until the controllers report workload name rolled
// out: its Workload observed and every desired replica ready and up to
// date.
func (h *Harness) WaitRolledOut(name string) {
	h.T.Helper()
	h.Eventually("workload "+name+" rolled out", func(ctx context.Context) error {
		var w computev1alpha.Workload
		if err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: name}, &w); err != nil {
			return err
		}
		st := w.Status
		if st.ObservedGeneration != w.Generation || st.DesiredReplicas == 0 || st.ReadyReplicas != st.DesiredReplicas ||
			st.UpdatedReplicas != st.DesiredReplicas {
			return fmt.Errorf("status %+v at generation %d", st.ReplicaCounts, w.Generation)
		}
		return nil
	})
}

// FailInstance makes the simulated provider fail one instance of workload
// name in city the way a real runtime would (reason: ImageUnavailable,
// InstanceCrashing or ConfigurationError), through the provider's
// documented annotation, and waits until the instance reports it.
func (h *Harness) FailInstance(name, city string, ordinal int, reason string) *computev1alpha.Instance {
	h.T.Helper()
	var failed *computev1alpha.Instance
	h.Eventually(fmt.Sprintf("instance %d of %s in %s fails with %s", ordinal, name, city, reason), func(ctx context.Context) error {
		byCity, err := h.Instances(ctx, name)
		if err != nil {
			return err
		}
		if len(byCity[city]) <= ordinal {
			return fmt.Errorf("%s has %d instances", city, len(byCity[city]))
		}
		inst := byCity[city][ordinal]
		if inst.Annotations[simprovider.FailAnnotation] != reason {
			patch := client.MergeFrom(inst.DeepCopy())
			if inst.Annotations == nil {
				inst.Annotations = map[string]string{}
			}
			inst.Annotations[simprovider.FailAnnotation] = reason
			if err := h.Client.Patch(ctx, &inst, patch); err != nil {
				return err
			}
		}
		for _, c := range inst.Status.Conditions {
			if c.Type == computev1alpha.ConditionReady && c.Status == metav1.ConditionFalse && c.Reason == reason {
				failed = &inst
				return nil
			}
		}
		return fmt.Errorf("conditions %v", inst.Status.Conditions)
	})
	return failed
}

// liveFactory sets the project the commands of a Live harness run in.
func (h *Harness) liveFactory(f *cmdutil.Factory) {
	if h.Project != "" {
		f.Project = h.Project
	}
}

// Release lets the simulated provider finish starting the held instances
// (WorkloadBuilder.Held) of workload name in cities (every city when none
// is given), the ones that exist and the ones the controllers create
// meanwhile (an ordered placement creates one after another), and waits
// until the controllers report those cities' deployments ready.
func (h *Harness) Release(name string, cities ...string) {
	h.T.Helper()
	in := func(city string) bool { return len(cities) == 0 || slices.Contains(cities, city) }
	h.Eventually(fmt.Sprintf("%s released in %v", name, cities), func(ctx context.Context) error {
		var w computev1alpha.Workload
		if err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: name}, &w); err != nil {
			return err
		}
		var wds computev1alpha.WorkloadDeploymentList
		if err := h.Client.List(ctx, &wds, client.InNamespace(h.Namespace), client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(w.UID)}); err != nil {
			return err
		}
		want := citiesOf(&w, in)
		var waiting []string
		have := 0
		for i := range wds.Items {
			wd := &wds.Items[i]
			if !in(wd.Spec.CityCode) {
				continue
			}
			have++
			if err := h.releaseHeld(ctx, wd.Name); err != nil {
				return err
			}
			if !deploymentReady(wd) {
				waiting = append(waiting, fmt.Sprintf("%s %+v", wd.Spec.CityCode, wd.Status.ReplicaCounts))
			}
		}
		switch {
		case have != want:
			return fmt.Errorf("%d of %d deployments exist", have, want)
		case len(waiting) > 0:
			return fmt.Errorf("not ready: %s", strings.Join(waiting, "; "))
		}
		return nil
	})
}

// citiesOf counts the cities of w's placements that in selects: one
// deployment each.
func citiesOf(w *computev1alpha.Workload, in func(city string) bool) int {
	n := 0
	for _, p := range w.Spec.Placements {
		for _, city := range slices.Concat(p.CityCodes, locations.SelectedCityCodes(p.LocationSelector)) {
			if in(city) {
				n++
			}
		}
	}
	return n
}

// releaseHeld takes the hold off the held instances of deployment wd.
func (h *Harness) releaseHeld(ctx context.Context, wd string) error {
	var insts computev1alpha.InstanceList
	if err := h.Client.List(ctx, &insts, client.InNamespace(h.Namespace), client.MatchingLabels{computev1alpha.WorkloadDeploymentNameLabel: wd}); err != nil {
		return err
	}
	for i := range insts.Items {
		inst := &insts.Items[i]
		if _, held := inst.Annotations[simprovider.HoldAnnotation]; !held {
			continue
		}
		patch := client.MergeFrom(inst.DeepCopy())
		delete(inst.Annotations, simprovider.HoldAnnotation)
		if err := h.Client.Patch(ctx, inst, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// deploymentReady reports whether wd's status is of its generation and
// every one of its desired replicas (at least one) is ready and updated.
func deploymentReady(wd *computev1alpha.WorkloadDeployment) bool {
	n := wd.Status.ReplicaCounts
	return wd.Status.ObservedGeneration == wd.Generation && n.DesiredReplicas != 0 && n.ReadyReplicas == n.DesiredReplicas &&
		n.UpdatedReplicas == n.DesiredReplicas && n.Replicas == n.DesiredReplicas
}

// seedInstanceTypes publishes Datum's standard InstanceTypes in the plane,
// as compute-local does: the CLI checks templates against them and the
// cell sizes quota claims from them. Start seeds every plane.
func seedInstanceTypes(ctx context.Context, p *planes.Plane) error {
	c, err := client.New(p.Config(), client.Options{Scheme: management.NewScheme()})
	if err != nil {
		return err
	}
	for _, it := range apitest.StandardInstanceTypes() {
		if err := c.Create(ctx, it.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create InstanceType %s: %w", it.Name, err)
		}
	}
	return nil
}
