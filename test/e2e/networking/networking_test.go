//go:build e2e

// Package networking runs the chain end to end with the
// NetworkingIntegration feature gate on, on a local platform of its own
// (`compute-local up --feature-gates NetworkingIntegration=true`, cells DFW
// and LHR running the networking stand-in): a Workload whose Instances
// attach to a network becomes Available, and the Instances a user reads in
// the project show the addresses their networks assigned; the samples of
// config/samples (applied strictly) run that way too.
//
// It starts its own platform rather than turning the gate on for the whole
// compute suite: the other suites keep testing the default (gate off, the
// runtime provider assigns addresses), and this platform is small (one
// project, two cities) so CI pays well under two minutes for it.
//
//	go test -tags e2e -count=1 ./test/e2e/networking/
package networking

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/test/e2e/internal/fixture"
	"github.com/citycells/compute/test/e2e/internal/serial"
)

// cities are the platform's cities; the i-th city's network pool is
// 10.(100+i).0.0/16.
var cities = []string{"DFW", "LHR"}

// pools are the networking stand-in's pools, by city.
var pools = map[string]netip.Prefix{
	"DFW": netip.MustParsePrefix("10.100.0.0/16"),
	"LHR": netip.MustParsePrefix("10.101.0.0/16"),
}

var (
	project client.Client
	cells   = map[string]client.Client{}
)

func TestMain(m *testing.M) {
	os.Exit(serial.RunPlatform(m, platform.Config{
		Cities:       cities,
		Managers:     platform.ManagersRequired,
		FeatureGates: "NetworkingIntegration=true",
	}, 6*time.Minute, func(p *platform.Platform) error {
		s := runtime.NewScheme()
		for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, computev1alpha.AddToScheme, networkingv1alpha.AddToScheme} {
			if err := add(s); err != nil {
				return err
			}
		}
		var err error
		if project, err = client.New(p.Config(platform.ProjectPlane(platform.DefaultProject)), client.Options{Scheme: s}); err != nil {
			return fmt.Errorf("failed to create a project client: %w", err)
		}
		for _, c := range p.State().Clusters {
			if cells[c.City], err = client.New(p.Config(c.Name), client.Options{Scheme: s}); err != nil {
				return fmt.Errorf("failed to create a client of %s: %w", c.Name, err)
			}
		}
		return nil
	}))
}

// newProjectNamespace creates a project namespace bound to every city and
// returns it with its federation (and cell) namespace.
func newProjectNamespace(t *testing.T) (string, string) {
	t.Helper()
	return fixture.ProjectNamespace(t, project, cities)
}

func TestWithNetworkingIntegrationTheChainRunsAndInstancesShowTheirNetworksAddresses(t *testing.T) {
	g := NewWithT(t)
	ns, cellNS := newProjectNamespace(t)
	w := &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	w.Spec.Template.Spec.Runtime = computev1alpha.InstanceRuntimeSpec{
		Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
		Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
			Name: "app", Image: "ghcr.io/citycells/hello:1.0",
		}}},
	}
	w.Spec.Template.Spec.NetworkInterfaces = []computev1alpha.InstanceNetworkInterface{{Network: computev1alpha.NetworkReference{Name: "default"}}}
	w.Spec.Placements = []computev1alpha.WorkloadPlacement{{
		Name: "global", CityCodes: cities, ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 2},
	}}
	g.Expect(project.Create(t.Context(), w)).To(Succeed())

	t.Log("the Workload becomes Available with every replica ready")
	g.Eventually(func(g Gomega) {
		got := &computev1alpha.Workload{}
		g.Expect(project.Get(t.Context(), client.ObjectKeyFromObject(w), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, computev1alpha.ConditionAvailable)).To(BeTrue(), "Available: %+v", got.Status.Conditions)
		g.Expect(got.Status.ReadyReplicas).To(BeEquivalentTo(4))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

	t.Log("the Instances in the project show the addresses their city's network assigned")
	g.Eventually(func(g Gomega) {
		list := &computev1alpha.InstanceList{}
		g.Expect(project.List(t.Context(), list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(4))
		seen := map[string]bool{}
		for _, inst := range list.Items {
			city := inst.Labels[computev1alpha.CityCodeLabel]
			g.Expect(pools).To(HaveKey(city), inst.Name)
			g.Expect(inst.Status.NetworkInterfaces).To(HaveLen(1), inst.Name)
			ip := inst.Status.NetworkInterfaces[0].Assignments.NetworkIP
			g.Expect(ip).NotTo(BeNil(), inst.Name)
			g.Expect(pools[city].Contains(netip.MustParseAddr(*ip))).To(BeTrue(), "%s in %s has %s, outside the city's pool %s", inst.Name, city, *ip, pools[city])
			g.Expect(seen).NotTo(HaveKey(*ip))
			seen[*ip] = true
		}
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

	t.Log("each cell holds a Ready NetworkBinding per Instance and the network's subnet in the city")
	for _, city := range cities {
		g.Eventually(func(g Gomega) {
			list := &networkingv1alpha.NetworkBindingList{}
			g.Expect(cells[city].List(t.Context(), list, client.InNamespace(cellNS))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(2), city)
			for _, b := range list.Items {
				g.Expect(meta.IsStatusConditionTrue(b.Status.Conditions, networkingv1alpha.NetworkBindingConditionReady)).To(BeTrue(), b.Name)
			}
			g.Expect(cells[city].Get(t.Context(), client.ObjectKey{Namespace: cellNS, Name: names.NetworkContextName("", "default", city)}, &networkingv1alpha.Subnet{})).To(Succeed())
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	}

	t.Log("deleting the Workload leaves no binding behind in any cell")
	g.Expect(project.Delete(t.Context(), w)).To(Succeed())
	for _, city := range cities {
		g.Eventually(func(g Gomega) {
			list := &networkingv1alpha.NetworkBindingList{}
			g.Expect(cells[city].List(t.Context(), list, client.InNamespace(cellNS))).To(Succeed())
			g.Expect(list.Items).To(BeEmpty(), city)
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}
}

// sampleObjects decodes the manifests of config/samples placed by city:
// Datum's current samples (datum-*.yaml) name a Location this suite does
// not bind; test/e2e/compute runs them.
func sampleObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	_, file, _, _ := goruntime.Caller(0)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(file), "..", "..", "..", "config", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "datum-") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("failed to decode %s: %v", f, err)
			}
			if len(u.Object) > 0 {
				out = append(out, u)
			}
		}
	}
	return out
}

func TestWithNetworkingIntegrationTheSamplesRunAndShowTheirAddresses(t *testing.T) {
	g := NewWithT(t)
	ns, _ := newProjectNamespace(t)
	var workloads []string
	for _, obj := range sampleObjects(t) {
		obj.SetNamespace(ns)
		//nolint:staticcheck // Patch with client.Apply is the only apply that takes FieldValidation (strict), as kubectl apply --validate=strict does
		g.Expect(project.Patch(t.Context(), obj, client.Apply, client.FieldOwner("e2e-samples"), client.ForceOwnership,
			client.FieldValidation(metav1.FieldValidationStrict))).To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
		if obj.GetKind() == computev1alpha.WorkloadKind {
			workloads = append(workloads, obj.GetName())
		}
	}
	g.Expect(workloads).NotTo(BeEmpty())

	for _, name := range workloads {
		t.Logf("sample Workload %s becomes Available with every replica ready", name)
		g.Eventually(func(g Gomega) {
			got := &computev1alpha.Workload{}
			g.Expect(project.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, got)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, computev1alpha.ConditionAvailable)).To(BeTrue(), "Available: %+v", got.Status.Conditions)
			g.Expect(got.Status.DesiredReplicas).To(BeNumerically(">", 0))
			g.Expect(got.Status.ReadyReplicas).To(Equal(got.Status.DesiredReplicas))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}

	t.Log("every Instance in the project shows an address of its city's pool")
	g.Eventually(func(g Gomega) {
		list := &computev1alpha.InstanceList{}
		g.Expect(project.List(t.Context(), list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).NotTo(BeEmpty())
		for _, inst := range list.Items {
			city := inst.Labels[computev1alpha.CityCodeLabel]
			g.Expect(inst.Status.NetworkInterfaces).NotTo(BeEmpty(), inst.Name)
			ip := inst.Status.NetworkInterfaces[0].Assignments.NetworkIP
			g.Expect(ip).NotTo(BeNil(), inst.Name)
			g.Expect(pools[city].Contains(netip.MustParseAddr(*ip))).To(BeTrue(), "%s in %s has %s, outside %s", inst.Name, city, *ip, pools[city])
		}
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
}
