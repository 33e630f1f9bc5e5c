// Package quota_test runs compute's quota on real API servers: the quota
// service (compute-quota) against a project's quota plane, with hundreds of
// claims racing for a small grant, and the cell's quota Client against that
// plane, reproducing every QuotaGranted failure reason for real (a stopped
// apiserver, a missing namespace, an RBAC denial, a missing grant, missing
// namespace labels, an unknown project behind Milo's URL scheme).
package quota_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/quota"
	"github.com/citycells/compute/internal/standin/quotaservice"
	"github.com/citycells/compute/test/integration/fixtures"
)

// The shared environment: a project's quota plane with the quota service
// running against it, and a cell plane holding the cell namespaces.
var (
	env       *fixtures.Env
	quotaCfg  *rest.Config
	cellCfg   *rest.Config
	quotaKube client.WithWatch
	cellKube  client.Client
)

// defaultProject is the project the shared quota service bootstraps a
// default grant for.
const defaultProject = "p-default"

func TestMain(m *testing.M) {
	os.Exit(fixtures.Run(m, fixtures.Input{
		Planes: []planes.PlaneSpec{
			{Name: "quota", CRDDirs: []string{fixtures.ExternalCRDDir()}},
			// The cell sizes claims from its InstanceType catalog: it
			// serves compute's CRDs and the standard types.
			{Name: "cell", CRDDirs: []string{fixtures.CRDDir()}},
		},
		Setup: setup,
	}))
}

// setup builds the tests' clients and starts the shared quota service.
func setup(ctx context.Context, e *fixtures.Env) error {
	env = e
	quotaCfg, cellCfg = e.Config("quota"), e.Config("cell")
	quotaKube, cellKube = e.Client("quota"), e.Client("cell")
	grant, err := quotaservice.ComputeGrant(10, "40", "80Gi")
	if err != nil {
		return err
	}
	mgr, err := newService(ctx, quotaCfg, quotaservice.Options{Project: defaultProject, DefaultGrant: grant})
	if err != nil {
		return err
	}
	e.Go("quota service", mgr.Start)
	return nil
}

// newService returns a quota service against cfg, to be started with ctx
// (its bootstrap runs under it).
func newService(ctx context.Context, cfg *rest.Config, opts quotaservice.Options) (manager.Manager, error) {
	return quotaservice.NewManager(ctx, cfg, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 ctrl.Log.WithName("quota-service"),
	}, opts)
}

// startService runs a quota service against cfg until the returned stop is
// called.
func startService(cfg *rest.Config, opts quotaservice.Options) (func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := newService(ctx, cfg, opts)
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "quota service: %v\n", err)
		}
	}, nil
}

// startServiceForTest runs a quota service for the duration of a test.
func startServiceForTest(t testing.TB, cfg *rest.Config, opts quotaservice.Options) func() {
	t.Helper()
	stop, err := startService(cfg, opts)
	if err != nil {
		t.Fatalf("failed to start the quota service: %v", err)
	}
	stopped := false
	stopOnce := func() {
		if !stopped {
			stopped = true
			stop()
		}
	}
	t.Cleanup(stopOnce)
	return stopOnce
}

// uniqueName returns prefix-<random suffix>.
func uniqueName(prefix string) string {
	return prefix + "-" + rand.String(6)
}

// ensureNamespace creates a namespace if it does not exist.
func ensureNamespace(t testing.TB, c client.Client, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("failed to create namespace %s: %v", name, err)
	}
}

// createGrant gives project the compute allowances in namespace ns.
func createGrant(t testing.TB, c client.Client, ns, name, project string, instances int64, vcpu, memory string) *quotav1alpha1.ResourceGrant {
	t.Helper()
	amounts, err := quotaservice.ComputeGrant(instances, vcpu, memory)
	if err != nil {
		t.Fatal(err)
	}
	g := quotaservice.DefaultGrantFor(project, name, ns, amounts)
	if err := c.Create(context.Background(), g); err != nil {
		t.Fatalf("failed to create grant %s/%s: %v", ns, name, err)
	}
	return g
}

// newClaim returns a claim like a cell makes for one d1-standard-2
// Instance of project.
func newClaim(ns, name, project string) *quotav1alpha1.ResourceClaim {
	ref := quota.ProjectRef(project)
	return &quotav1alpha1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: quotav1alpha1.ResourceClaimSpec{
			ConsumerRef: ref,
			Requests: []quotav1alpha1.ResourceRequest{
				{ResourceType: computev1alpha.ResourceTypeInstances, Amount: 1},
				{ResourceType: computev1alpha.ResourceTypeVCPUs, Amount: 1000},
				{ResourceType: computev1alpha.ResourceTypeMemory, Amount: 2048},
			},
			ResourceRef: quotav1alpha1.UnversionedObjectReference{APIGroup: ref.APIGroup, Kind: ref.Kind, Name: ref.Name},
		},
	}
}

// counterValue reads a counter of controller-runtime's registry; labels
// select the series (nil for an unlabelled counter).
func counterValue(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// logger returns a logger for test contexts.
func logger() logr.Logger {
	return ctrl.Log.WithName("test")
}
