package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// env returns an environment variable read from a Secret key.
func secretEnv(name, secret, key string) computev1alpha.EnvVar {
	return computev1alpha.EnvVar{Name: name, ValueFrom: &computev1alpha.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key},
	}}
}

// withPolicy gives the Workload one interface with one ingress rule.
func withPolicy(rule computev1alpha.NetworkPolicyIngressRule) func(*computev1alpha.Workload) {
	return func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.NetworkInterfaces = []computev1alpha.InstanceNetworkInterface{{
			Network:       computev1alpha.NetworkReference{Name: "default"},
			NetworkPolicy: &computev1alpha.InstanceNetworkInterfaceNetworkPolicy{Ingress: []computev1alpha.NetworkPolicyIngressRule{rule}},
		}}
	}
}

func policyPort(p intstr.IntOrString, end *int32) computev1alpha.NetworkPolicyPort {
	return computev1alpha.NetworkPolicyPort{Port: &p, EndPort: end}
}

func from(cidr string, except ...string) computev1alpha.NetworkPolicyPeer {
	return computev1alpha.NetworkPolicyPeer{IPBlock: &computev1alpha.IPBlock{CIDR: cidr, Except: except}}
}

const nic0 = "spec.template.spec.networkInterfaces[0].networkPolicy.ingress[0]"

// metric0 is the path of the first placement's first metric.
const metric0 = "spec.placements[0].scaleSettings.metrics[0]"

// cpuMetric is a resource metric on name at utilization percent.
func cpuMetric(name corev1.ResourceName, utilization int32) computev1alpha.MetricSpec {
	return computev1alpha.MetricSpec{Resource: &computev1alpha.ResourceMetricSource{
		Name: name, Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To(utilization)}}}
}

func TestValidateDatumShapes(t *testing.T) {
	env := bound("DFW", "LHR")
	tests := map[string]struct {
		workload *computev1alpha.Workload
		want     []violation
	}{
		"a sandbox with Secret and ConfigMap volumes and valueFrom is accepted": {
			workload: makeWorkload().withVolume(secret("creds", "db-creds")).withVolume(configMap("conf", "app-config")).
				withMount("creds", "/etc/creds").withMount("conf", "/etc/app").with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Volumes[0].Secret.Items = []corev1.KeyToPath{{Key: "password", Path: "db/password", Mode: ptr.To[int32](0o400)}}
				w.Spec.Template.Spec.Volumes[0].Secret.DefaultMode = ptr.To[int32](0o440)
				w.Spec.Template.Spec.Volumes[1].ConfigMap.Optional = ptr.To(true)
				w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Env = []computev1alpha.EnvVar{
					secretEnv("DB_PASSWORD", "db-creds", "password"),
					{Name: "MODE", ValueFrom: &computev1alpha.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "mode", Optional: ptr.To(true)}}},
				}
				w.Spec.Template.Metadata.Name = "ignored"
				w.Spec.Template.Metadata.Namespace = "default"
				w.Spec.Placements[0].ScaleSettings.MaxReplicas = ptr.To[int32](4)
				w.Spec.Placements[0].ScaleSettings.Metrics = []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](70)}}}}
			}).with(withPolicy(computev1alpha.NetworkPolicyIngressRule{
				Ports: []computev1alpha.NetworkPolicyPort{policyPort(intstr.FromInt32(8000), ptr.To[int32](8100)), policyPort(intstr.FromString("http"), nil)},
				From:  []computev1alpha.NetworkPolicyPeer{from("10.0.0.0/8", "10.1.0.0/16"), from("2001:db8::/32")},
			})).build(),
		},
		"a disk attached to a container without a mount path is accepted": {
			workload: makeWorkload().withVolume(disk("data", "")).withMount("data", "").build(),
		},
		"a Secret volume without a mount path is rejected": {
			workload: makeWorkload().withVolume(secret("creds", "db")).withMount("creds", "").build(),
			want:     []violation{{field.ErrorTypeRequired, "spec.template.spec.runtime.sandbox.containers[0].volumeAttachments[0].mountPath"}},
		},
		"a Secret volume naming no Secret is rejected": {
			workload: makeWorkload().withVolume(secret("creds", "")).withMount("creds", "/c").build(),
			want:     []violation{{field.ErrorTypeRequired, "spec.template.spec.volumes[0].secret.secretName"}},
		},
		"a Secret volume with both spellings of its name is rejected": {
			workload: makeWorkload().withVolume(secret("creds", "db")).withMount("creds", "/c").with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Volumes[0].Secret.Name = "other"
			}).build(),
			want: []violation{{field.ErrorTypeForbidden, "spec.template.spec.volumes[0].secret.name"}},
		},
		"a volume item escaping the volume is rejected": {
			workload: makeWorkload().withVolume(configMap("conf", "c")).withMount("conf", "/c").with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Volumes[0].ConfigMap.Items = []corev1.KeyToPath{{Key: "a", Path: "../etc/passwd"}}
			}).build(),
			want: []violation{{field.ErrorTypeInvalid, "spec.template.spec.volumes[0].configMap.items[0].path"}},
		},
		"a default mode above 0777 is rejected": {
			workload: makeWorkload().withVolume(configMap("conf", "c")).withMount("conf", "/c").with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Volumes[0].ConfigMap.DefaultMode = ptr.To[int32](0o1777)
			}).build(),
			want: []violation{{field.ErrorTypeInvalid, "spec.template.spec.volumes[0].configMap.defaultMode"}},
		},
		"a disk populator with two sources is rejected": {
			workload: makeWorkload().withVolume(disk("boot", "ubuntu")).asVirtualMachine("boot").with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Volumes[0].Disk.Template.Spec.Populator.Filesystem = &computev1alpha.FilesystemDiskPopulator{Type: "ext4"}
			}).build(),
			want: []violation{{field.ErrorTypeForbidden, "spec.template.spec.volumes[0].disk.template.spec.populator"}},
		},
		"a disk without a template is rejected": {
			workload: makeWorkload().withVolume(computev1alpha.InstanceVolume{Name: "d", Disk: &computev1alpha.DiskTemplateVolumeSource{}}).withMount("d", "").build(),
			want:     []violation{{field.ErrorTypeRequired, "spec.template.spec.volumes[0].disk.template"}},
		},
		"a disk mixing the template with the deprecated shape is rejected": {
			workload: makeWorkload().withVolume(disk("d", "")).withMount("d", "").with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Volumes[0].Disk.Size = ptr.To(resource.MustParse("1Gi"))
			}).build(),
			want: []violation{{field.ErrorTypeForbidden, "spec.template.spec.volumes[0].disk"}},
		},
		"a disk size that is not storage is rejected": {
			workload: makeWorkload().withVolume(disk("d", "")).withMount("d", "").with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Volumes[0].Disk.Template.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			}).build(),
			want: []violation{{field.ErrorTypeNotSupported, "spec.template.spec.volumes[0].disk.template.spec.resources.requests[cpu]"}},
		},
		"a virtual machine booting from a disk without an image is rejected": {
			workload: makeWorkload().withVolume(disk("boot", "")).asVirtualMachine("boot").build(),
			want:     []violation{{field.ErrorTypeInvalid, "spec.template.spec.runtime.virtualMachine.volumeAttachments[0].name"}},
		},
		"a valueFrom with two sources is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				e := secretEnv("A", "s", "k")
				e.ValueFrom.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "k"}
				w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Env = []computev1alpha.EnvVar{e}
			}).build(),
			want: []violation{{field.ErrorTypeForbidden, "spec.template.spec.runtime.sandbox.containers[0].env[0].valueFrom"}},
		},
		"a value together with valueFrom is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				e := secretEnv("A", "s", "k")
				e.Value = "literal"
				w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Env = []computev1alpha.EnvVar{e}
			}).build(),
			want: []violation{{field.ErrorTypeForbidden, "spec.template.spec.runtime.sandbox.containers[0].env[0].value"}},
		},
		"an empty valueFrom is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Env = []computev1alpha.EnvVar{{Name: "A", ValueFrom: &computev1alpha.EnvVarSource{}}}
			}).build(),
			want: []violation{{field.ErrorTypeRequired, "spec.template.spec.runtime.sandbox.containers[0].env[0].valueFrom"}},
		},
		"a secretKeyRef without a key is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Env = []computev1alpha.EnvVar{secretEnv("A", "s", "")}
			}).build(),
			want: []violation{{field.ErrorTypeRequired, "spec.template.spec.runtime.sandbox.containers[0].env[0].valueFrom.secretKeyRef.key"}},
		},
		"a fieldRef is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Env = []computev1alpha.EnvVar{{Name: "A", ValueFrom: &computev1alpha.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
			}).build(),
			want: []violation{{field.ErrorTypeForbidden, "spec.template.spec.runtime.sandbox.containers[0].env[0].valueFrom.fieldRef"}},
		},
		"a port range ending before it starts is rejected": {
			workload: makeWorkload().with(withPolicy(computev1alpha.NetworkPolicyIngressRule{
				Ports: []computev1alpha.NetworkPolicyPort{policyPort(intstr.FromInt32(9000), ptr.To[int32](8000))},
			})).build(),
			want: []violation{{field.ErrorTypeInvalid, nic0 + ".ports[0].endPort"}},
		},
		"a port range from a named port is rejected": {
			workload: makeWorkload().with(withPolicy(computev1alpha.NetworkPolicyIngressRule{
				Ports: []computev1alpha.NetworkPolicyPort{policyPort(intstr.FromString("http"), ptr.To[int32](8000))},
			})).build(),
			want: []violation{{field.ErrorTypeForbidden, nic0 + ".ports[0].endPort"}},
		},
		"a port out of range is rejected": {
			workload: makeWorkload().with(withPolicy(computev1alpha.NetworkPolicyIngressRule{
				Ports: []computev1alpha.NetworkPolicyPort{policyPort(intstr.FromInt32(70000), nil)},
			})).build(),
			want: []violation{{field.ErrorTypeInvalid, nic0 + ".ports[0].port"}},
		},
		"a CIDR that does not parse is rejected": {
			workload: makeWorkload().with(withPolicy(computev1alpha.NetworkPolicyIngressRule{
				From: []computev1alpha.NetworkPolicyPeer{from("10.0.0.0/33")},
			})).build(),
			want: []violation{{field.ErrorTypeInvalid, nic0 + ".from[0].ipBlock.cidr"}},
		},
		"an except outside its CIDR is rejected": {
			workload: makeWorkload().with(withPolicy(computev1alpha.NetworkPolicyIngressRule{
				From: []computev1alpha.NetworkPolicyPeer{from("10.0.0.0/16", "10.1.0.0/24", "10.0.0.0/16")},
			})).build(),
			want: []violation{
				{field.ErrorTypeInvalid, nic0 + ".from[0].ipBlock.except[0]"},
				{field.ErrorTypeInvalid, nic0 + ".from[0].ipBlock.except[1]"},
			},
		},
		"a source without an ipBlock is rejected": {
			workload: makeWorkload().with(withPolicy(computev1alpha.NetworkPolicyIngressRule{
				From: []computev1alpha.NetworkPolicyPeer{{}},
			})).build(),
			want: []violation{{field.ErrorTypeRequired, nic0 + ".from[0].ipBlock"}},
		},
		"a template namespace other than the Workload's is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Template.Metadata.Namespace = "other" }).build(),
			want:     []violation{{field.ErrorTypeInvalid, "spec.template.metadata.namespace"}},
		},
		"template finalizers are rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Template.Metadata.Finalizers = []string{"x/y"} }).build(),
			want:     []violation{{field.ErrorTypeForbidden, "spec.template.metadata.finalizers"}},
		},
		"a metric target with two values is rejected": {
			workload: makeWorkload().withAutoscaling(computev1alpha.MetricSpec{Resource: &computev1alpha.ResourceMetricSource{
				Name: corev1.ResourceMemory, Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](70), AverageValue: ptr.To(resource.MustParse("1Gi"))}}}).build(),
			want: []violation{{field.ErrorTypeForbidden, metric0 + ".resource.target"}},
		},
		"a metric on an unknown resource is rejected": {
			workload: makeWorkload().withAutoscaling(cpuMetric("gpu", 70)).build(),
			want:     []violation{{field.ErrorTypeNotSupported, metric0 + ".resource.name"}},
		},
		"a metric without a target is rejected": {
			workload: makeWorkload().withAutoscaling(computev1alpha.MetricSpec{Resource: &computev1alpha.ResourceMetricSource{Name: corev1.ResourceCPU}}).build(),
			want:     []violation{{field.ErrorTypeRequired, metric0 + ".resource.target"}},
		},
		"a metric without a resource is rejected": {
			workload: makeWorkload().withAutoscaling(computev1alpha.MetricSpec{}).build(),
			want:     []violation{{field.ErrorTypeRequired, metric0 + ".resource"}},
		},
		"a total value target is refused (differs from Datum)": {
			workload: makeWorkload().withAutoscaling(computev1alpha.MetricSpec{Resource: &computev1alpha.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: computev1alpha.MetricTarget{Value: ptr.To(resource.MustParse("2"))}}}).build(),
			want: []violation{{field.ErrorTypeInvalid, metric0 + ".resource.target.value"}},
		},
		"an average value of zero is rejected": {
			workload: makeWorkload().withAutoscaling(computev1alpha.MetricSpec{Resource: &computev1alpha.ResourceMetricSource{
				Name: corev1.ResourceMemory, Target: computev1alpha.MetricTarget{AverageValue: ptr.To(resource.MustParse("0"))}}}).build(),
			want: []violation{{field.ErrorTypeInvalid, metric0 + ".resource.target.averageValue"}},
		},
		"a utilization of zero is rejected": {
			workload: makeWorkload().withAutoscaling(cpuMetric(corev1.ResourceCPU, 0)).build(),
			want:     []violation{{field.ErrorTypeInvalid, metric0 + ".resource.target.averageUtilization"}},
		},
		"a utilization above the cap is rejected": {
			workload: makeWorkload().withAutoscaling(cpuMetric(corev1.ResourceCPU, MaxAverageUtilization+1)).build(),
			want:     []violation{{field.ErrorTypeInvalid, metric0 + ".resource.target.averageUtilization"}},
		},
		"cpu and memory, each once, are accepted": {
			workload: makeWorkload().withAutoscaling(cpuMetric(corev1.ResourceCPU, MaxAverageUtilization), computev1alpha.MetricSpec{Resource: &computev1alpha.ResourceMetricSource{
				Name: corev1.ResourceMemory, Target: computev1alpha.MetricTarget{AverageValue: ptr.To(resource.MustParse("512Mi"))}}}).build(),
		},
		"the same resource twice is rejected": {
			workload: makeWorkload().withAutoscaling(cpuMetric(corev1.ResourceCPU, 50), cpuMetric(corev1.ResourceCPU, 70)).build(),
			want:     []violation{{field.ErrorTypeDuplicate, "spec.placements[0].scaleSettings.metrics[1].resource.name"}},
		},
		"metrics without maxReplicas are rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].ScaleSettings.Metrics = []computev1alpha.MetricSpec{cpuMetric(corev1.ResourceCPU, 70)}
			}).build(),
			want: []violation{{field.ErrorTypeRequired, "spec.placements[0].scaleSettings.maxReplicas"}},
		},
		"maxReplicas without metrics is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Placements[0].ScaleSettings.MaxReplicas = ptr.To[int32](4) }).build(),
			want:     []violation{{field.ErrorTypeRequired, "spec.placements[0].scaleSettings.metrics"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := tc.workload.DeepCopy()
			DefaultWorkload(w)
			got := violations(ValidateWorkloadCreate(w, env))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("ValidateWorkloadCreate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultWorkloadMovesTheFirstVolumeShape(t *testing.T) {
	w := makeWorkload().with(func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Volumes = []computev1alpha.InstanceVolume{
			{Name: "boot", Disk: &computev1alpha.DiskTemplateVolumeSource{Image: "ubuntu", Size: ptr.To(resource.MustParse("20Gi"))}},
			{Name: "creds", Secret: &computev1alpha.SecretVolumeSource{Name: "db"}},
		}
	}).build()
	DefaultWorkload(w)
	want := []computev1alpha.InstanceVolume{
		{Name: "boot", Disk: &computev1alpha.DiskTemplateVolumeSource{Template: &computev1alpha.DiskTemplateVolumeSourceTemplate{
			Spec: computev1alpha.DiskSpec{
				Type:      DefaultDiskType,
				Resources: &computev1alpha.DiskResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("20Gi")}},
				Populator: &computev1alpha.DiskPopulator{Image: &computev1alpha.ImageDiskPopulator{Name: "ubuntu"}},
			},
		}}},
		{Name: "creds", Secret: &computev1alpha.SecretVolumeSource{SecretName: "db"}},
	}
	if diff := cmp.Diff(want, w.Spec.Template.Spec.Volumes); diff != "" {
		t.Fatalf("DefaultWorkload() volumes mismatch (-want +got):\n%s", diff)
	}
}
