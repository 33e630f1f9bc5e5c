package validation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// violation is what a test compares of a field error.
type violation struct {
	Type  field.ErrorType
	Field string
}

func violations(errs field.ErrorList) []violation {
	var out []violation
	for _, e := range errs {
		out = append(out, violation{e.Type, e.Field})
	}
	return out
}

func TestValidateWorkloadCreate(t *testing.T) {
	env := bound("DFW", "LHR", "SIN")
	tests := map[string]struct {
		workload *computev1alpha.Workload
		want     []violation
	}{
		"a valid workload is accepted": {
			workload: makeWorkload().build(),
		},
		"a name that is not a DNS label is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Name = "Web_App" }).build(),
			want:     []violation{{field.ErrorTypeInvalid, "metadata.name"}},
		},
		"a workload without placements is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Placements = nil }).build(),
			want:     []violation{{field.ErrorTypeRequired, "spec.placements"}},
		},
		"two placements with the same name are rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements = append(w.Spec.Placements, w.Spec.Placements[0])
				w.Spec.Placements[1].CityCodes = []string{"SIN"}
			}).build(),
			want: []violation{{field.ErrorTypeDuplicate, "spec.placements[1].name"}},
		},
		"a placement name that is not a DNS label is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Placements[0].Name = "Edge!" }).build(),
			want:     []violation{{field.ErrorTypeInvalid, "spec.placements[0].name"}},
		},
		"a placement that says nothing about where is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Placements[0].CityCodes = nil }).build(),
			want:     []violation{{field.ErrorTypeRequired, "spec.placements[0].locations"}},
		},
		"bound Locations by name are accepted": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = nil
				w.Spec.Placements[0].Locations = []computev1alpha.PlacementLocation{{Name: "dfw"}, {Name: "sin"}}
			}).build(),
		},
		"a Location that is not bound, a duplicate and a malformed name are rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = nil
				w.Spec.Placements[0].Locations = []computev1alpha.PlacementLocation{{Name: "dfw"}, {Name: "gcp-us-south1-a"}, {Name: "dfw"}, {Name: "Bad_Name"}}
			}).build(),
			want: []violation{
				{field.ErrorTypeInvalid, "spec.placements[0].locations[1].name"},
				{field.ErrorTypeDuplicate, "spec.placements[0].locations[2].name"},
				{field.ErrorTypeInvalid, "spec.placements[0].locations[3].name"},
			},
		},
		"a selector on topology is accepted": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = nil
				w.Spec.Placements[0].LocationSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"topology.datum.net/region": "us"}}
			}).build(),
		},
		"an empty selector is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = nil
				w.Spec.Placements[0].LocationSelector = &metav1.LabelSelector{}
			}).build(),
			want: []violation{{field.ErrorTypeInvalid, "spec.placements[0].locationSelector"}},
		},
		"a selector naming a city that is not bound is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = nil
				w.Spec.Placements[0].LocationSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"topology.datum.net/city-code": "NRT"}}
			}).build(),
			want: []violation{{field.ErrorTypeInvalid, "spec.placements[0].locationSelector.matchLabels[topology.datum.net/city-code]"}},
		},
		"a malformed selector is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = nil
				w.Spec.Placements[0].LocationSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: "topology.datum.net/region", Operator: "Near"}}}
			}).build(),
			want: []violation{{field.ErrorTypeInvalid, "spec.placements[0].locationSelector.matchExpressions[0].operator"}},
		},
		"locations and a selector together are rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].Locations = []computev1alpha.PlacementLocation{{Name: "dfw"}}
			}).build(),
			want: []violation{{field.ErrorTypeForbidden, "spec.placements[0].cityCodes"}},
		},
		"a malformed city code is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Placements[0].CityCodes[1] = "lhr" }).build(),
			want:     []violation{{field.ErrorTypeInvalid, "spec.placements[0].cityCodes[1]"}},
		},
		"a city listed twice is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Placements[0].CityCodes[1] = "DFW" }).build(),
			want:     []violation{{field.ErrorTypeDuplicate, "spec.placements[0].cityCodes[1]"}},
		},
		"a city not bound to the project is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Placements[0].CityCodes[0] = "XYZ" }).build(),
			want:     []violation{{field.ErrorTypeInvalid, "spec.placements[0].cityCodes[0]"}},
		},
		"negative replicas are rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Placements[0].ScaleSettings.MinReplicas = -1 }).build(),
			want:     []violation{{field.ErrorTypeInvalid, "spec.placements[0].scaleSettings.minReplicas"}},
		},
		"maxReplicas below minReplicas is rejected": {
			workload: makeWorkload().withAutoscaling(cpuMetric(corev1.ResourceCPU, 70)).with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].ScaleSettings.MaxReplicas = ptr.To[int32](1)
			}).build(),
			want: []violation{{field.ErrorTypeInvalid, "spec.placements[0].scaleSettings.maxReplicas"}},
		},
		"an unknown instance management policy is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].ScaleSettings.InstanceManagementPolicy = "Random"
			}).build(),
			want: []violation{{field.ErrorTypeNotSupported, "spec.placements[0].scaleSettings.instanceManagementPolicy"}},
		},
		"a maxUnavailable of zero is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].RolloutStrategy = &computev1alpha.RolloutStrategy{MaxUnavailable: ptr.To[int32](0)}
			}).build(),
			want: []violation{{field.ErrorTypeInvalid, "spec.placements[0].rolloutStrategy.maxUnavailable"}},
		},
		"a revision history limit above 100 is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.RevisionHistoryLimit = ptr.To[int32](101) }).build(),
			want:     []violation{{field.ErrorTypeInvalid, "spec.revisionHistoryLimit"}},
		},
		"a template without a runtime is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Template.Spec.Runtime.Sandbox = nil }).build(),
			want:     []violation{{field.ErrorTypeRequired, "spec.template.spec.runtime"}},
		},
		"a template with both runtimes is rejected": {
			workload: makeWorkload().withVolume(disk("boot", "ubuntu")).with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.VirtualMachine = &computev1alpha.VirtualMachineRuntime{
					VolumeAttachments: []computev1alpha.VolumeAttachment{{Name: "boot"}},
				}
			}).build(),
			want: []violation{{field.ErrorTypeForbidden, "spec.template.spec.runtime.virtualMachine"}},
		},
		"an instance type outside the catalog is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Resources.InstanceType = "datumcloud/d9-huge"
			}).build(),
			want: []violation{{field.ErrorTypeNotSupported, "spec.template.spec.runtime.resources.instanceType"}},
		},
		"a request for an unknown resource is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Resources.Requests = corev1.ResourceList{"gpu": resource.MustParse("1")}
			}).build(),
			want: []violation{{field.ErrorTypeNotSupported, "spec.template.spec.runtime.resources.requests[gpu]"}},
		},
		"a sandbox without containers is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Template.Spec.Runtime.Sandbox.Containers = nil }).build(),
			want:     []violation{{field.ErrorTypeRequired, "spec.template.spec.runtime.sandbox.containers"}},
		},
		"two containers with the same name are rejected": {
			workload: makeWorkload().withContainer(computev1alpha.SandboxContainer{Name: "app", Image: "nginx"}).build(),
			want:     []violation{{field.ErrorTypeDuplicate, "spec.template.spec.runtime.sandbox.containers[1].name"}},
		},
		"a container without an image is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "" }).build(),
			want:     []violation{{field.ErrorTypeRequired, "spec.template.spec.runtime.sandbox.containers[0].image"}},
		},
		"an image with whitespace is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "nginx latest"
			}).build(),
			want: []violation{{field.ErrorTypeInvalid, "spec.template.spec.runtime.sandbox.containers[0].image"}},
		},
		"an invalid environment variable name is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Env = []computev1alpha.EnvVar{{Name: "A"}, {Name: "1=B"}}
			}).build(),
			want: []violation{{field.ErrorTypeInvalid, "spec.template.spec.runtime.sandbox.containers[0].env[1].name"}},
		},
		"a request above its limit is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Resources = &computev1alpha.ContainerResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				}
			}).build(),
			want: []violation{{field.ErrorTypeInvalid, "spec.template.spec.runtime.sandbox.containers[0].resources.requests[cpu]"}},
		},
		"a port out of range is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Ports[0].Port = 70000
			}).build(),
			want: []violation{{field.ErrorTypeInvalid, "spec.template.spec.runtime.sandbox.containers[0].ports[0].port"}},
		},
		"an unknown port protocol is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Ports[0].Protocol = "HTTP"
			}).build(),
			want: []violation{{field.ErrorTypeNotSupported, "spec.template.spec.runtime.sandbox.containers[0].ports[0].protocol"}},
		},
		"two containers listening on the same port are rejected": {
			workload: makeWorkload().withContainer(computev1alpha.SandboxContainer{
				Name: "sidecar", Image: "envoy", Ports: []computev1alpha.NamedPort{{Name: "admin", Port: 8080}},
			}).build(),
			want: []violation{{field.ErrorTypeDuplicate, "spec.template.spec.runtime.sandbox.containers[1].ports[0].port"}},
		},
		"a port name used twice is rejected": {
			workload: makeWorkload().withContainer(computev1alpha.SandboxContainer{
				Name: "sidecar", Image: "envoy", Ports: []computev1alpha.NamedPort{{Name: "http", Port: 9090}},
			}).build(),
			want: []violation{{field.ErrorTypeDuplicate, "spec.template.spec.runtime.sandbox.containers[1].ports[0].name"}},
		},
		"an attachment of a volume that does not exist is rejected": {
			workload: makeWorkload().withMount("data", "/data").build(),
			want:     []violation{{field.ErrorTypeNotFound, "spec.template.spec.runtime.sandbox.containers[0].volumeAttachments[0].name"}},
		},
		"a container mount without a path is rejected": {
			workload: makeWorkload().withVolume(configMap("conf", "app-config")).withMount("conf", "").build(),
			want:     []violation{{field.ErrorTypeRequired, "spec.template.spec.runtime.sandbox.containers[0].volumeAttachments[0].mountPath"}},
		},
		"a relative mount path is rejected": {
			workload: makeWorkload().withVolume(configMap("conf", "app-config")).withMount("conf", "etc/app").build(),
			want:     []violation{{field.ErrorTypeInvalid, "spec.template.spec.runtime.sandbox.containers[0].volumeAttachments[0].mountPath"}},
		},
		"a volume with two sources is rejected": {
			workload: makeWorkload().withVolume(computev1alpha.InstanceVolume{
				Name: "conf", ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: "a"}, Secret: &computev1alpha.SecretVolumeSource{SecretName: "b"},
			}).withMount("conf", "/etc/app").build(),
			want: []violation{{field.ErrorTypeForbidden, "spec.template.spec.volumes[0]"}},
		},
		"two volumes with the same name are rejected": {
			workload: makeWorkload().withVolume(configMap("conf", "a")).withVolume(configMap("conf", "b")).withMount("conf", "/etc/app").build(),
			want:     []violation{{field.ErrorTypeDuplicate, "spec.template.spec.volumes[1].name"}},
		},
		"a virtual machine without a boot volume is rejected": {
			workload: makeWorkload().asVirtualMachine().build(),
			want:     []violation{{field.ErrorTypeRequired, "spec.template.spec.runtime.virtualMachine.volumeAttachments"}},
		},
		"a virtual machine booting from a config map is rejected": {
			workload: makeWorkload().withVolume(configMap("conf", "a")).asVirtualMachine("conf").build(),
			want:     []violation{{field.ErrorTypeInvalid, "spec.template.spec.runtime.virtualMachine.volumeAttachments[0].name"}},
		},
		"a virtual machine booting from a disk with an image is accepted": {
			workload: makeWorkload().withVolume(disk("boot", "ubuntu-24.04")).asVirtualMachine("boot").build(),
		},
		"a reserved template label is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Metadata.Labels = map[string]string{computev1alpha.WorkloadUIDLabel: "x"}
			}).build(),
			want: []violation{{field.ErrorTypeForbidden, "spec.template.metadata.labels[compute.datumapis.com/workload-uid]"}},
		},
		"a restartedAt that is not a time is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Metadata.Annotations = map[string]string{computev1alpha.RestartedAtAnnotation: "now"}
			}).build(),
			want: []violation{{field.ErrorTypeInvalid, "spec.template.metadata.annotations[compute.datumapis.com/restartedAt]"}},
		},
		"a template location is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Location = &computev1alpha.LocationReference{Name: "x", Namespace: "y"}
			}).build(),
			want: []violation{{field.ErrorTypeForbidden, "spec.template.spec.location"}},
		},
		"a network interface without a network is rejected": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.NetworkInterfaces = []computev1alpha.InstanceNetworkInterface{{}}
			}).build(),
			want: []violation{{field.ErrorTypeRequired, "spec.template.spec.networkInterfaces[0].network.name"}},
		},
		"every violation is reported at once": {
			workload: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = []string{"XYZ"}
				w.Spec.Placements[0].ScaleSettings.MinReplicas = -1
				w.Spec.Template.Spec.Runtime.Resources.InstanceType = "nope"
				w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = ""
			}).build(),
			want: []violation{
				{field.ErrorTypeInvalid, "spec.placements[0].cityCodes[0]"},
				{field.ErrorTypeInvalid, "spec.placements[0].scaleSettings.minReplicas"},
				{field.ErrorTypeNotSupported, "spec.template.spec.runtime.resources.instanceType"},
				{field.ErrorTypeRequired, "spec.template.spec.runtime.sandbox.containers[0].image"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := violations(ValidateWorkloadCreate(tc.workload, env))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("ValidateWorkloadCreate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnboundCityMessageListsEnabledCities(t *testing.T) {
	w := makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Placements[0].CityCodes = []string{"XYZ"} }).build()
	tests := map[string]struct {
		env  Environment
		want string
	}{
		"with cities bound the message lists them": {
			env: bound("LHR", "DFW"), want: "city XYZ is not enabled for this project; enabled cities: DFW, LHR",
		},
		"with no city bound the message says what to do": {
			env: bound(), want: "no LocationBinding in namespace default",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := ValidateWorkloadCreate(w, tc.env)
			if len(errs) != 1 || !strings.Contains(errs[0].Detail, tc.want) {
				t.Fatalf("errors = %v, want one saying %q", errs, tc.want)
			}
		})
	}
}

func TestValidateWorkloadUpdate(t *testing.T) {
	env := bound("DFW", "LHR")
	tests := map[string]struct {
		old, new *computev1alpha.Workload
		env      Environment
		want     []violation
	}{
		"an unchanged spec is accepted even when it would now be invalid": {
			old: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Placements[0].CityCodes = []string{"SIN"} }).build(),
			new: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = []string{"SIN"}
				w.Labels = map[string]string{"team": "a"}
			}).build(),
			env: env,
		},
		"a workload being deleted is accepted": {
			old: makeWorkload().build(),
			new: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.DeletionTimestamp = &metav1.Time{}
				w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = ""
			}).build(),
			env: env,
		},
		"a city the workload already used is not re-checked against the bindings": {
			old: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Placements[0].CityCodes = []string{"SIN"} }).build(),
			new: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = []string{"SIN"}
				w.Spec.Placements[0].ScaleSettings.MinReplicas = 5
			}).build(),
			env: env,
		},
		"a newly added unbound city is rejected": {
			old: makeWorkload().build(),
			new: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = append(w.Spec.Placements[0].CityCodes, "SIN")
			}).build(),
			env:  env,
			want: []violation{{field.ErrorTypeInvalid, "spec.placements[0].cityCodes[2]"}},
		},
		"switching from sandbox to virtual machine is rejected": {
			old:  makeWorkload().build(),
			new:  makeWorkload().withVolume(disk("boot", "ubuntu")).asVirtualMachine("boot").build(),
			env:  env,
			want: []violation{{field.ErrorTypeInvalid, "spec.template.spec.runtime"}},
		},
		"changing a placement's instance management policy is rejected": {
			old: makeWorkload().build(),
			new: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].ScaleSettings.InstanceManagementPolicy = computev1alpha.ParallelInstanceManagementPolicy
			}).build(),
			env:  env,
			want: []violation{{field.ErrorTypeInvalid, "spec.placements[0].scaleSettings.instanceManagementPolicy"}},
		},
		"a new placement may choose any policy": {
			old: makeWorkload().build(),
			new: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements = append(w.Spec.Placements, computev1alpha.WorkloadPlacement{
					Name: "batch", CityCodes: []string{"DFW"},
					ScaleSettings: computev1alpha.HorizontalScaleSettings{InstanceManagementPolicy: computev1alpha.ParallelInstanceManagementPolicy},
				})
			}).build(),
			env: env,
		},
		"a city restart with a time is accepted": {
			old: makeWorkload().build(),
			new: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Annotations = map[string]string{computev1alpha.CityRestartedAtAnnotationPrefix + "DFW": "2026-05-01T12:00:00Z"}
			}).build(),
			env: env,
		},
		"a city restart that is not a time is rejected even when the spec is unchanged": {
			old: makeWorkload().build(),
			new: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Annotations = map[string]string{computev1alpha.CityRestartedAtAnnotationPrefix + "DFW": "now"}
			}).build(),
			env:  env,
			want: []violation{{field.ErrorTypeInvalid, "metadata.annotations[compute.datumapis.com/restartedAt.DFW]"}},
		},
		"a city restart naming no city code is rejected": {
			old: makeWorkload().build(),
			new: makeWorkload().with(func(w *computev1alpha.Workload) {
				w.Annotations = map[string]string{computev1alpha.CityRestartedAtAnnotationPrefix + "dallas": "2026-05-01T12:00:00Z"}
			}).build(),
			env:  env,
			want: []violation{{field.ErrorTypeInvalid, "metadata.annotations[compute.datumapis.com/restartedAt.dallas]"}},
		},
		"a new image is accepted": {
			old: makeWorkload().build(),
			new: makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "app:2" }).build(),
			env: env,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := violations(ValidateWorkloadUpdate(tc.new, tc.old, tc.env))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("ValidateWorkloadUpdate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultWorkload(t *testing.T) {
	w := makeWorkload().withVolume(computev1alpha.InstanceVolume{Name: "d", Disk: &computev1alpha.DiskTemplateVolumeSource{Template: &computev1alpha.DiskTemplateVolumeSourceTemplate{}}}).with(func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Resources.InstanceType = ""
		w.Spec.Placements[0].RolloutStrategy = &computev1alpha.RolloutStrategy{}
	}).build()
	DefaultWorkload(w)

	checks := map[string]struct{ got, want any }{
		"the history limit defaults to 10":            {ptr.Deref(w.Spec.RevisionHistoryLimit, -1), int32(10)},
		"the policy defaults to OrderedReady":         {w.Spec.Placements[0].ScaleSettings.InstanceManagementPolicy, computev1alpha.OrderedReadyInstanceManagementPolicy},
		"maxUnavailable defaults to 1":                {ptr.Deref(w.Spec.Placements[0].RolloutStrategy.MaxUnavailable, -1), int32(1)},
		"the instance type defaults to d1-standard-2": {w.Spec.Template.Spec.Runtime.Resources.InstanceType, "datumcloud-d1-standard-2"},
		"ports default to TCP":                        {w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Ports[0].Protocol, corev1.ProtocolTCP},
		"disks default to pd-standard":                {w.Spec.Template.Spec.Volumes[0].Disk.Template.Spec.Type, DefaultDiskType},
	}
	for name, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", name, c.got, c.want)
		}
	}

	again := w.DeepCopy()
	DefaultWorkload(again)
	if diff := cmp.Diff(w, again); diff != "" {
		t.Errorf("defaulting is not idempotent (-once +twice):\n%s", diff)
	}
}

func TestUnusedVolumes(t *testing.T) {
	w := makeWorkload().withVolume(configMap("used", "a")).withVolume(configMap("spare", "b")).withMount("used", "/etc/a").build()
	if diff := cmp.Diff([]string{"spare"}, UnusedVolumes(&w.Spec.Template.Spec)); diff != "" {
		t.Fatalf("UnusedVolumes() mismatch (-want +got):\n%s", diff)
	}
}
