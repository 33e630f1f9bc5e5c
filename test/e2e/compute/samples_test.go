//go:build e2e

package compute

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
)

// sampleObjects decodes every manifest of config/samples.
func sampleObjects(t *testing.T) map[string][]*unstructured.Unstructured {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(file), "..", "..", "..", "config", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	out := map[string][]*unstructured.Unstructured{}
	for _, f := range files {
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
				out[filepath.Base(f)] = append(out[filepath.Base(f)], u)
			}
		}
	}
	return out
}

func TestTheSamplesApplyStrictlyAndBecomeAvailableWithTheirCellsLocation(t *testing.T) {
	ns := newProjectNamespace(t)
	applySamples(t, ns, func(file string) bool { return !strings.HasPrefix(file, "datum-") }, map[string]counts{
		"sandbox-volumes-env":      {deployments: 1, replicas: 1, ready: 1, desired: 1, updated: 1},
		"sandbox-envfrom-security": {deployments: 1, replicas: 1, ready: 1, desired: 1, updated: 1},
		"vm-boot-disk":             {deployments: 1, replicas: 1, ready: 1, desired: 1, updated: 1},
		"multi-placement":          {deployments: 2, replicas: 3, ready: 3, desired: 3, updated: 3},
		"network-policy":           {deployments: 2, replicas: 2, ready: 2, desired: 2, updated: 2},
	})
}

// TestDatumsCurrentSamplesReachTheirLocations applies Datum's current
// samples — placed by Location name and by a selector on the city — in a
// namespace bound to the platform's Locations and to gcp-us-south1-a, a
// second Location in DFW: the named ones reach DFW through it, the
// selector reaches both DFW Locations (two deployments).
func TestDatumsCurrentSamplesReachTheirLocations(t *testing.T) {
	ns := newProjectNamespace(t)
	bindLocation(t, ns.name, "gcp-us-south1-a", map[string]string{
		networkingv1alpha.CityCodeTopologyKey: "DFW", "topology.datum.net/region": "us-south1"})
	applySamples(t, ns, func(file string) bool { return strings.HasPrefix(file, "datum-") }, map[string]counts{
		"datum-sandbox-locations": {deployments: 1, replicas: 1, ready: 1, desired: 1, updated: 1},
		"datum-vm-locations":      {deployments: 1, replicas: 1, ready: 1, desired: 1, updated: 1},
		"datum-location-selector": {deployments: 2, replicas: 2, ready: 2, desired: 2, updated: 2},
	})
}

// applySamples applies the samples of the files use picks to namespace ns
// as kubectl apply --validate=strict does, and expects each Workload to
// become Available with want's counts, every deployment and Instance in
// its Location.
func applySamples(t *testing.T, ns projectNamespace, use func(file string) bool, want map[string]counts) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	var workloads []*computev1alpha.Workload
	for file, objs := range sampleObjects(t) {
		if !use(file) {
			continue
		}
		for _, obj := range objs {
			obj.SetNamespace(ns.name)
			t.Logf("kubectl apply --validate=strict -f config/samples/%s: %s %s", file, obj.GetKind(), obj.GetName())
			//nolint:staticcheck // Patch with client.Apply is the only apply that takes FieldValidation (strict), as kubectl apply --validate=strict does
			g.Expect(project.Patch(ctx, obj, client.Apply, client.FieldOwner("e2e-samples"), client.ForceOwnership,
				client.FieldValidation(metav1.FieldValidationStrict))).To(Succeed())
			if obj.GetKind() == computev1alpha.WorkloadKind {
				workloads = append(workloads, &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns.name, Name: obj.GetName()}})
			}
		}
	}
	g.Expect(workloads).To(HaveLen(len(want)))

	for _, w := range workloads {
		t.Logf("Workload %s becomes Available", w.Name)
		expectAvailable(t, w, want[w.Name])
		for _, wd := range deploymentsOf(g, w) {
			city := wd.Spec.CityCode
			location := wd.Spec.LocationRef
			g.Expect(location).NotTo(BeNil(), "the deployment %s names no Location", wd.Name)
			g.Expect(location.Namespace).To(Equal(platform.LocationNamespace))
			g.Expect(wd.Status.Location).To(Equal(location), "the deployment %s reports its Location", wd.Name)
			for _, inst := range instancesIn(g, cells[city], ns.hub, wd.Name) {
				g.Expect(inst.Spec.Location).To(Equal(location), "Instance %s in %s", inst.Name, city)
				g.Expect(inst.Status.NetworkInterfaces).NotTo(BeEmpty(), "Instance %s in %s shows its addresses", inst.Name, city)
				g.Expect(inst.Status.NetworkInterfaces[0].Assignments.NetworkIP).NotTo(BeNil())
			}
		}
	}
}

// bindLocation creates (once) a ready Location of the platform named name
// with topology, and binds it to namespace ns, as an operator does.
func bindLocation(t *testing.T, ns, name string, topology map[string]string) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	loc := &networkingv1alpha.Location{ObjectMeta: metav1.ObjectMeta{Namespace: platform.LocationNamespace, Name: name},
		Spec: networkingv1alpha.LocationSpec{LocationClassName: networkingv1alpha.LocationClassDatumManaged, Topology: topology}}
	if err := project.Create(ctx, loc); err == nil {
		meta.SetStatusCondition(&loc.Status.Conditions, metav1.Condition{Type: networkingv1alpha.LocationConditionReady,
			Status: metav1.ConditionTrue, Reason: "E2E", Message: "made ready by the test"})
		g.Expect(project.Status().Update(ctx, loc)).To(Succeed())
	} else {
		g.Expect(apierrors.IsAlreadyExists(err)).To(BeTrue(), "creating Location %s: %v", name, err)
	}
	b := &networkingv1alpha.LocationBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1alpha.LocationBindingSpec{LocationRef: networkingv1alpha.LocationReference{Namespace: platform.LocationNamespace, Name: name}}}
	g.Expect(project.Create(ctx, b)).To(Succeed())
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: networkingv1alpha.LocationBindingConditionReady,
		Status: metav1.ConditionTrue, Reason: "E2E", Message: "bound by the test"})
	g.Expect(project.Status().Update(ctx, b)).To(Succeed())
}

func TestAMissingSecretHoldsTheInstancesNamingItUntilItIsCreated(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	b := makeWorkload(ns.name, "needs-secret").withPlacement("edge", 1, "DFW")
	b.w.Spec.Template.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "creds", Secret: &computev1alpha.SecretVolumeSource{SecretName: "db-creds"}}}
	b.w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "creds", MountPath: ptr.To("/etc/creds")}}
	w := b.create(t)

	t.Log("DFW says SourceNotFound and its instance, held by the ReferencedData gate, names the Secret the project lacks")
	got := &computev1alpha.Workload{}
	g.Eventually(func(g Gomega) {
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
		cs := cityOf(got, "edge", "DFW")
		g.Expect(cs).NotTo(BeNil())
		g.Expect(cs.Reason).To(Equal(computev1alpha.ReasonSourceNotFound))
		g.Expect(cs.DeploymentName).NotTo(BeEmpty())
		projected := instancesIn(g, project, ns.name, cs.DeploymentName)
		g.Expect(projected).To(HaveLen(1))
		g.Expect(projected[0].Spec.Controller.SchedulingGates).To(ContainElement(
			computev1alpha.SchedulingGate{Name: computev1alpha.ReferencedDataSchedulingGate}))
		ready := meta.FindStatusCondition(projected[0].Status.Conditions, computev1alpha.ConditionReferencedDataReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(computev1alpha.ReasonSourceNotFound))
		g.Expect(ready.Message).To(ContainSubstring("Secret db-creds"))
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())

	t.Log("creating the Secret makes the Workload Available")
	g.Expect(project.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.name, Name: "db-creds"},
		StringData: map[string]string{"password": "s3cret"}})).To(Succeed())
	expectAvailable(t, w, counts{deployments: 1, replicas: 1, ready: 1, desired: 1, updated: 1})
}
