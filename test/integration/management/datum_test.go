package management

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/test/integration/fixtures"
)

// policy gives w one interface on network "default" with one ingress rule.
func policy(w *computev1alpha.Workload, rule computev1alpha.NetworkPolicyIngressRule) {
	w.Spec.Template.Spec.NetworkInterfaces = []computev1alpha.InstanceNetworkInterface{{
		Network:       computev1alpha.NetworkReference{Name: "default"},
		NetworkPolicy: &computev1alpha.InstanceNetworkInterfaceNetworkPolicy{Ingress: []computev1alpha.NetworkPolicyIngressRule{rule}},
	}}
}

// keyRef returns an environment variable read from key of a Secret.
func keyRef(secret, key string) *computev1alpha.EnvVarSource {
	return &computev1alpha.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}
}

const policy0 = "spec.template.spec.networkInterfaces[0].networkPolicy.ingress[0]"

func TestWebhookRejectsInvalidDatumShapesWithFieldPaths(t *testing.T) {
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	valid := func() *workloadBuilder { return makeWorkload("app", ns).withPlacement("edge", 1, "DFW") }

	tests := map[string]struct {
		workload *computev1alpha.Workload
		fields   []string
	}{
		"a volume with two sources": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "conf",
					ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: "c"}, Secret: &computev1alpha.SecretVolumeSource{SecretName: "s"}}}
			}).build(),
			// The CRD's CEL rule answers before the webhook: same field.
			fields: nil,
		},
		"a volumeAttachment naming no volume": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				sandbox(w).VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "nothing"}}
			}).build(),
			fields: []string{"spec.template.spec.runtime.sandbox.containers[0].volumeAttachments[0].name"},
		},
		"a valueFrom with two sources": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				src := keyRef("s", "k")
				src.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "k"}
				sandbox(w).Env = []computev1alpha.EnvVar{{Name: "A", ValueFrom: src}}
			}).build(),
			fields: []string{"spec.template.spec.runtime.sandbox.containers[0].env[0].valueFrom"},
		},
		"a value and a valueFrom": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				sandbox(w).Env = []computev1alpha.EnvVar{{Name: "A", Value: "x", ValueFrom: keyRef("s", "k")}}
			}).build(),
			fields: []string{"spec.template.spec.runtime.sandbox.containers[0].env[0].value"},
		},
		"a fieldRef": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				sandbox(w).Env = []computev1alpha.EnvVar{{Name: "A", ValueFrom: &computev1alpha.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
			}).build(),
			fields: []string{"spec.template.spec.runtime.sandbox.containers[0].env[0].valueFrom.fieldRef"},
		},
		"a disk populator with two sources": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				d := diskOf("ubuntu", "10Gi")
				d.Template.Spec.Populator.Filesystem = &computev1alpha.FilesystemDiskPopulator{Type: "ext4"}
				w.Spec.Template.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "data", Disk: d}}
				sandbox(w).VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "data"}}
			}).build(),
			fields: []string{"spec.template.spec.volumes[0].disk.template.spec.populator"},
		},
		"a Secret volume with both spellings of its name": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "c",
					Secret: &computev1alpha.SecretVolumeSource{SecretName: "a", Name: "b"}}}
				sandbox(w).VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "c", MountPath: ptr.To("/c")}}
			}).build(),
			fields: []string{"spec.template.spec.volumes[0].secret.name"},
		},
		"a port range that ends before it starts": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				policy(w, computev1alpha.NetworkPolicyIngressRule{Ports: []computev1alpha.NetworkPolicyPort{
					{Port: ptr.To(intstr.FromInt32(9000)), EndPort: ptr.To[int32](8000)}}})
			}).build(),
			fields: []string{policy0 + ".ports[0].endPort"},
		},
		"a port out of range": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				policy(w, computev1alpha.NetworkPolicyIngressRule{Ports: []computev1alpha.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(70000))}}})
			}).build(),
			fields: []string{policy0 + ".ports[0].port"},
		},
		"a CIDR that does not parse and an exception outside its block": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				policy(w, computev1alpha.NetworkPolicyIngressRule{From: []computev1alpha.NetworkPolicyPeer{
					{IPBlock: &computev1alpha.IPBlock{CIDR: "10.0.0.0/33"}},
					{IPBlock: &computev1alpha.IPBlock{CIDR: "10.0.0.0/16", Except: []string{"192.168.0.0/24"}}},
				}})
			}).build(),
			fields: []string{policy0 + ".from[0].ipBlock.cidr", policy0 + ".from[1].ipBlock.except[0]"},
		},
		"a metric target with two values": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].ScaleSettings.MaxReplicas = ptr.To[int32](4)
				w.Spec.Placements[0].ScaleSettings.Metrics = []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](50), AverageValue: ptr.To(resource.MustParse("1"))}}}}
			}).build(),
			fields: []string{"spec.placements[0].scaleSettings.metrics[0].resource.target"},
		},
		"metrics without maxReplicas": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].ScaleSettings.Metrics = []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](50)}}}}
			}).build(),
			fields: []string{"spec.placements[0].scaleSettings.maxReplicas"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			err := clients[projectA].Create(context.Background(), tc.workload)
			if tc.fields == nil {
				g.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "want the schema to refuse, got %v", err)
				g.Expect(err.Error()).To(gomega.ContainSubstring("spec.template.spec.volumes[0]: Invalid value"))
				g.Expect(err.Error()).To(gomega.ContainSubstring("exactly one of disk, configMap or secret must be set"))
				return
			}
			g.Expect(isWebhookDenial(err)).To(gomega.BeTrue(), "want a denial by the validating webhook, got %v", err)
			g.Expect(causeFields(err)).To(gomega.ConsistOf(tc.fields))
		})
	}
}

// samplesDir is config/samples of this repository.
func samplesDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "config", "samples")
}

// readManifests decodes every YAML document of a file.
func readManifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("failed to decode %s: %v", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

func TestSamplesApplyWithStrictValidationAndRoundTrip(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(samplesDir(), "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in %s: %v", samplesDir(), err)
	}
	sort.Strings(files)
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	bindCity(t, projectA, ns, "LHR", true)
	// The Location Datum's samples name, in DFW.
	createBinding(t, projectA, ns, ensureNamedLocation(t, projectA, "gcp-us-south1-a",
		map[string]string{networkingv1alpha.CityCodeTopologyKey: "DFW", "topology.datum.net/region": "us-south1"}, true))
	c := clients[projectA]
	ctx := context.Background()
	workloads := 0
	for _, file := range files {
		for _, obj := range readManifests(t, file) {
			obj.SetNamespace(ns)
			t.Logf("%s: %s %s", filepath.Base(file), obj.GetKind(), obj.GetName())
			// kubectl apply --validate=strict is server-side strict field
			// validation: an unknown or duplicate field is an error.
			//nolint:staticcheck // Patch with client.Apply is the only apply that takes FieldValidation (strict), as kubectl apply --validate=strict does
			if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("samples-test"), client.ForceOwnership,
				client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Fatalf("%s: applying %s %s with strict validation failed: %v", filepath.Base(file), obj.GetKind(), obj.GetName(), err)
			}
			if obj.GetKind() != computev1alpha.WorkloadKind {
				continue
			}
			workloads++

			// get -o yaml → apply changes nothing.
			stored := &computev1alpha.Workload{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
				t.Fatal(err)
			}
			again := &unstructured.Unstructured{}
			again.SetGroupVersionKind(computev1alpha.GroupVersion.WithKind(computev1alpha.WorkloadKind))
			again.SetName(stored.Name)
			again.SetNamespace(ns)
			spec, err := runtimeToUnstructured(stored.Spec)
			if err != nil {
				t.Fatal(err)
			}
			again.Object["spec"] = spec
			//nolint:staticcheck // Patch with client.Apply is the only apply that takes FieldValidation (strict), as kubectl apply --validate=strict does
			if err := c.Patch(ctx, again, client.Apply, client.FieldOwner("samples-test"), client.ForceOwnership,
				client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Fatalf("re-applying Workload %s as read back failed: %v", stored.Name, err)
			}
			after := &computev1alpha.Workload{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), after); err != nil {
				t.Fatal(err)
			}
			if after.Generation != stored.Generation || !equality.Semantic.DeepEqual(after.Spec, stored.Spec) {
				t.Fatalf("re-applying Workload %s as read back changed it (generation %d → %d)", stored.Name, stored.Generation, after.Generation)
			}
		}
	}
	if workloads < 4 {
		t.Fatalf("want at least 4 sample Workloads, found %d", workloads)
	}
}

func TestAFullDatumTemplateIsAcceptedAndDeployedUnchanged(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	w := makeWorkload("full", ns).with(func(w *computev1alpha.Workload) {
		w.Spec.Template = fixtures.DatumTemplate()
		w.Spec.Placements = []computev1alpha.WorkloadPlacement{{Name: "edge", CityCodes: []string{"DFW"}, ScaleSettings: fixtures.DatumScaleSettings()}}
	}).build()
	create(t, projectA, w)
	g.Expect(fixtures.Diff(fixtures.DatumTemplate(), w.Spec.Template)).To(gomega.BeEmpty(), "admission changed a defaulted Datum template")
	g.Eventually(func(g gomega.Gomega) {
		wds := deploymentsOf(g, projectA, w)
		g.Expect(wds).To(gomega.HaveKey("DFW"))
		g.Expect(fixtures.Diff(fixtures.DatumTemplate(), wds["DFW"].Spec.Template)).To(gomega.BeEmpty())
		g.Expect(fixtures.Diff(fixtures.DatumScaleSettings(), wds["DFW"].Spec.ScaleSettings)).To(gomega.BeEmpty())
	}, timeout, interval).Should(gomega.Succeed())
}

// runtimeToUnstructured converts a Workload spec to its JSON object form.
func runtimeToUnstructured(spec computev1alpha.WorkloadSpec) (map[string]any, error) {
	return apiruntime.DefaultUnstructuredConverter.ToUnstructured(&spec)
}
