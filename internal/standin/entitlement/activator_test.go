package entitlement

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	servicesv1alpha1 "github.com/citycells/compute/api/services/v1alpha1"
	"github.com/citycells/compute/internal/planes"
)

func TestActivatorActivatesRequestedCompute(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	env := planes.StartForTest(t, planes.Options{
		Planes: []planes.PlaneSpec{{Name: "project", CRDDirs: []string{filepath.Join(root, "config", "crd", "external")}}},
		Log:    os.Stderr,
	})
	scheme := k8sruntime.NewScheme()
	if err := servicesv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cfg := env.Plane("project").Config()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Activator{}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = mgr.Start(ctx) }()

	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	g := NewWithT(t)
	requested := &servicesv1alpha1.ServiceEntitlement{
		ObjectMeta: metav1.ObjectMeta{Name: "compute"},
		Spec:       servicesv1alpha1.ServiceEntitlementSpec{ServiceRef: servicesv1alpha1.ServiceRef{Name: ComputeService}},
	}
	other := &servicesv1alpha1.ServiceEntitlement{
		ObjectMeta: metav1.ObjectMeta{Name: "dns"},
		Spec:       servicesv1alpha1.ServiceEntitlementSpec{ServiceRef: servicesv1alpha1.ServiceRef{Name: "dns.networking.miloapis.com"}},
	}
	g.Expect(c.Create(ctx, requested)).To(Succeed())
	g.Expect(c.Create(ctx, other)).To(Succeed())

	g.Eventually(func() servicesv1alpha1.EntitlementPhase {
		got := &servicesv1alpha1.ServiceEntitlement{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(requested), got)).To(Succeed())
		return got.Status.Phase
	}).WithTimeout(30*time.Second).Should(Equal(servicesv1alpha1.EntitlementPhaseActive), "a compute request becomes Active")

	got := &servicesv1alpha1.ServiceEntitlement{}
	g.Consistently(func() servicesv1alpha1.EntitlementPhase {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(other), got)).To(Succeed())
		return got.Status.Phase
	}).WithTimeout(2*time.Second).Should(BeEmpty(), "other services are not activated")
}
