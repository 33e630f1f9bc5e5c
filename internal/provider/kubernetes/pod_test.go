package kubernetes

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/referenceddata"
)

func TestPodForMetadataAndPodSettings(t *testing.T) {
	pod, err := podFor(makeInst().build(), 1)
	if err != nil {
		t.Fatal(err)
	}
	wantMeta := metav1.ObjectMeta{
		Name: "web-0", Namespace: "ns",
		Labels:      map[string]string{computev1alpha.WorkloadNameLabel: "web", InstanceLabel: "web-0"},
		Annotations: map[string]string{TemplateHashAnnotation: "h1"},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "compute.datumapis.com/v1alpha", Kind: "Instance", Name: "web-0", UID: "uid-1",
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}
	if diff := cmp.Diff(wantMeta, pod.ObjectMeta); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if ptr.Deref(pod.Spec.EnableServiceLinks, true) || ptr.Deref(pod.Spec.AutomountServiceAccountToken, true) {
		t.Errorf("the pod must mount no token and get no service links: %+v", pod.Spec)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("restartPolicy = %q, want Always", pod.Spec.RestartPolicy)
	}
}

func TestPodForContainers(t *testing.T) {
	cmEnv := computev1alpha.EnvVar{Name: "MODE", ValueFrom: &computev1alpha.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "mode"}}}
	secretEnv := computev1alpha.EnvVar{Name: "PASSWORD", ValueFrom: &computev1alpha.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password", Optional: ptr.To(true)}}}
	tests := map[string]struct {
		inst *computev1alpha.Instance
		want []corev1.Container
	}{
		"a container gets the whole instance type as requests and limits": {
			inst: makeInst().build(),
			want: []corev1.Container{{Name: "app", Image: "ghcr.io/x/app:1",
				Resources: corev1.ResourceRequirements{Requests: res("1", "2Gi"), Limits: res("1", "2Gi")}}},
		},
		"command, args, literal env and ports are passed on, TCP by default": {
			inst: makeInst().first(func(c *computev1alpha.SandboxContainer) {
				c.Command, c.Args = []string{"/app"}, []string{"--port", "8080"}
				c.Env = []computev1alpha.EnvVar{{Name: "A", Value: "b"}}
				c.Ports = []computev1alpha.NamedPort{{Name: "http", Port: 8080}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}
			}).build(),
			want: []corev1.Container{{Name: "app", Image: "ghcr.io/x/app:1", Command: []string{"/app"}, Args: []string{"--port", "8080"},
				Env:       []corev1.EnvVar{{Name: "A", Value: "b"}},
				Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}},
				Resources: corev1.ResourceRequirements{Requests: res("1", "2Gi"), Limits: res("1", "2Gi")}}},
		},
		"env from ConfigMap and Secret keys reads the cell's companions": {
			inst: makeInst().first(func(c *computev1alpha.SandboxContainer) { c.Env = []computev1alpha.EnvVar{cmEnv, secretEnv} }).build(),
			want: []corev1.Container{{Name: "app", Image: "ghcr.io/x/app:1",
				Env: []corev1.EnvVar{
					{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "configmap.app"}, Key: "mode", Optional: ptr.To(false)}}},
					{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "secret.db"}, Key: "password", Optional: ptr.To(true)}}},
				},
				Resources: corev1.ResourceRequirements{Requests: res("1", "2Gi"), Limits: res("1", "2Gi")}}},
		},
		"the instance's runtime requests size it rather than its type": {
			inst: makeInst().with(func(i *computev1alpha.Instance) { i.Spec.Runtime.Resources.Requests = res("500m", "1Gi") }).build(),
			want: []corev1.Container{{Name: "app", Image: "ghcr.io/x/app:1",
				Resources: corev1.ResourceRequirements{Requests: res("500m", "1Gi"), Limits: res("500m", "1Gi")}}},
		},
		"a sidecar with its own limits leaves the rest to the main container": {
			inst: makeInst().container(computev1alpha.SandboxContainer{Name: "proxy", Image: "envoy",
				Resources: &computev1alpha.ContainerResourceRequirements{Limits: res("100m", "128Mi")}}).build(),
			want: []corev1.Container{
				{Name: "app", Image: "ghcr.io/x/app:1", Resources: corev1.ResourceRequirements{Requests: res("900m", "1920Mi"), Limits: res("900m", "1920Mi")}},
				{Name: "proxy", Image: "envoy", Resources: corev1.ResourceRequirements{Requests: res("100m", "128Mi"), Limits: res("100m", "128Mi")}},
			},
		},
		"a container's own request is also its limit": {
			inst: makeInst().first(func(c *computev1alpha.SandboxContainer) {
				c.Resources = &computev1alpha.ContainerResourceRequirements{Requests: res("250m", "256Mi")}
			}).build(),
			want: []corev1.Container{{Name: "app", Image: "ghcr.io/x/app:1",
				Resources: corev1.ResourceRequirements{Requests: res("250m", "256Mi"), Limits: res("250m", "256Mi")}}},
		},
		"containers without their own share the instance evenly, the first taking the remainder": {
			inst: makeInst().container(computev1alpha.SandboxContainer{Name: "b", Image: "b"}).container(computev1alpha.SandboxContainer{Name: "c", Image: "c"}).build(),
			want: []corev1.Container{
				{Name: "app", Image: "ghcr.io/x/app:1", Resources: corev1.ResourceRequirements{Requests: res("334m", "684Mi"), Limits: res("334m", "684Mi")}},
				{Name: "b", Image: "b", Resources: corev1.ResourceRequirements{Requests: res("333m", "682Mi"), Limits: res("333m", "682Mi")}},
				{Name: "c", Image: "c", Resources: corev1.ResourceRequirements{Requests: res("333m", "682Mi"), Limits: res("333m", "682Mi")}},
			},
		},
		"ConfigMap and Secret volumes are mounted read-only": {
			inst: makeInst().
				volume(computev1alpha.InstanceVolume{Name: "conf", ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: "app"}}, "/etc/app").
				volume(computev1alpha.InstanceVolume{Name: "creds", Secret: &computev1alpha.SecretVolumeSource{SecretName: "db"}}, "/etc/creds").build(),
			want: []corev1.Container{{Name: "app", Image: "ghcr.io/x/app:1",
				VolumeMounts: []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/app", ReadOnly: true}, {Name: "creds", MountPath: "/etc/creds", ReadOnly: true}},
				Resources:    corev1.ResourceRequirements{Requests: res("1", "2Gi"), Limits: res("1", "2Gi")}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod, err := podFor(tc.inst, 1)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.want {
				// Every container learns its instance's name first.
				tc.want[i].Env = append([]corev1.EnvVar{{Name: "COMPUTE_INSTANCE_NAME", Value: tc.inst.Name}}, tc.want[i].Env...)
			}
			if diff := cmp.Diff(tc.want, pod.Spec.Containers); diff != "" {
				t.Errorf("containers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodForAllocationRatio(t *testing.T) {
	tests := map[string]struct {
		ratio          float64
		wantRequests   corev1.ResourceList
		wantGuaranteed bool
	}{
		"at 1 requests are the limits":               {ratio: 1, wantRequests: res("1", "2Gi"), wantGuaranteed: true},
		"zero is 1":                                  {ratio: 0, wantRequests: res("1", "2Gi"), wantGuaranteed: true},
		"below 1 is 1":                               {ratio: 0.5, wantRequests: res("1", "2Gi"), wantGuaranteed: true},
		"at 32 a container requests a 32nd":          {ratio: 32, wantRequests: res("32m", "64Mi")},
		"memory is rounded up to the MiB, cpu to 1m": {ratio: 3, wantRequests: res("334m", "683Mi")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod, err := podFor(makeInst().build(), tc.ratio)
			if err != nil {
				t.Fatal(err)
			}
			r := pod.Spec.Containers[0].Resources
			if diff := cmp.Diff(tc.wantRequests, r.Requests); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(res("1", "2Gi"), r.Limits); diff != "" {
				t.Errorf("limits are the instance type, whatever the ratio (-want +got):\n%s", diff)
			}
			if got := cmp.Equal(r.Requests, r.Limits); got != tc.wantGuaranteed {
				t.Errorf("requests equal limits = %v, want %v", got, tc.wantGuaranteed)
			}
		})
	}
}

func TestPodForVolumesAndPullSecrets(t *testing.T) {
	inst := makeInst().
		volume(computev1alpha.InstanceVolume{Name: "conf", ConfigMap: &computev1alpha.ConfigMapVolumeSource{
			Name: "app", Items: []corev1.KeyToPath{{Key: "k", Path: "p"}}, DefaultMode: ptr.To[int32](0o400)}}, "/etc/app").
		volume(computev1alpha.InstanceVolume{Name: "legacy", Secret: &computev1alpha.SecretVolumeSource{Name: "old", Optional: ptr.To(true)}}, "/etc/old").
		volume(computev1alpha.InstanceVolume{Name: "unused", ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: "nobody"}}, "").
		volume(computev1alpha.InstanceVolume{Name: "data", Disk: &computev1alpha.DiskTemplateVolumeSource{}}, "").
		with(func(i *computev1alpha.Instance) {
			i.Spec.Runtime.Sandbox.ImagePullSecrets = []computev1alpha.LocalSecretReference{{Name: "registry"}}
		}).build()
	pod, err := podFor(inst, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.Volume{
		{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "configmap.app"},
			Items:                []corev1.KeyToPath{{Key: "k", Path: "p"}}, DefaultMode: ptr.To[int32](0o400), Optional: ptr.To(false)}}},
		{Name: "legacy", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "secret.old", Optional: ptr.To(true)}}},
	}
	if diff := cmp.Diff(want, pod.Spec.Volumes); diff != "" {
		t.Errorf("volumes: only the attached ones, reading the companions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.LocalObjectReference{{Name: "secret.registry"}}, pod.Spec.ImagePullSecrets); diff != "" {
		t.Errorf("image pull secrets (-want +got):\n%s", diff)
	}
	if got := pod.Spec.Containers[0].ImagePullPolicy; got != corev1.PullAlways {
		t.Errorf("a private image is pulled with %q, want Always: a copy cached on a shared node would run for any tenant naming it", got)
	}
	if public, err := podFor(makeInst().build(), 1); err != nil || public.Spec.Containers[0].ImagePullPolicy != "" {
		t.Errorf("an image without pull secrets gets policy %q (%v), want the runtime's default", public.Spec.Containers[0].ImagePullPolicy, err)
	}
	wantRefs := []reference{{kind: referenceddata.KindConfigMap, object: "configmap.app", source: "app"}, {kind: referenceddata.KindSecret, object: "secret.registry", source: "registry"}}
	if diff := cmp.Diff(wantRefs, references(inst, pod), cmp.AllowUnexported(reference{})); diff != "" {
		t.Errorf("references: the ones not optional (-want +got):\n%s", diff)
	}
}

func TestPodForEnvFromSecurityContextAndClass(t *testing.T) {
	inst := makeInst().first(func(c *computev1alpha.SandboxContainer) {
		c.EnvFrom = []computev1alpha.EnvFromSource{
			{ConfigMapRef: &computev1alpha.ConfigMapEnvSource{Name: "app"}},
			{Prefix: "DB_", SecretRef: &computev1alpha.SecretEnvSource{Name: "db", Optional: ptr.To(true)}},
		}
		c.SecurityContext = &computev1alpha.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &computev1alpha.Capabilities{Add: []computev1alpha.Capability{"CAP_NET_BIND_SERVICE"}, Drop: []computev1alpha.Capability{"ALL"}},
			SeccompProfile:           &computev1alpha.SeccompProfile{Type: computev1alpha.SeccompProfileTypeRuntimeDefault},
		}
	}).container(computev1alpha.SandboxContainer{Name: "side", Image: "ghcr.io/x/side:1"}).with(func(i *computev1alpha.Instance) {
		i.Spec.Runtime.Class = "general-purpose"
		i.Spec.NetworkInterfaces = []computev1alpha.InstanceNetworkInterface{{Network: computev1alpha.NetworkReference{Name: "default"},
			Name: "eth0", IPFamilies: []computev1alpha.IPFamily{"IPv6", "IPv4"}, ReclaimPolicy: "Retain",
			Addresses: []computev1alpha.InstanceNetworkInterfaceAddressRequest{{Class: "public-ipv4"}}}}
	}).build()
	pod, err := podFor(inst, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantEnvFrom := []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "configmap.app"}, Optional: ptr.To(false)}},
		{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "secret.db"}, Optional: ptr.To(true)}},
	}
	if diff := cmp.Diff(wantEnvFrom, pod.Spec.Containers[0].EnvFrom); diff != "" {
		t.Errorf("envFrom reads the companions (-want +got):\n%s", diff)
	}
	wantSC := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if diff := cmp.Diff(wantSC, pod.Spec.Containers[0].SecurityContext); diff != "" {
		t.Errorf("securityContext (-want +got):\n%s", diff)
	}
	if pod.Spec.Containers[1].SecurityContext != nil || pod.Spec.Containers[1].EnvFrom != nil {
		t.Errorf("a container that states nothing got securityContext %+v and envFrom %+v, want the runtime's defaults",
			pod.Spec.Containers[1].SecurityContext, pod.Spec.Containers[1].EnvFrom)
	}
	if pod.Spec.SecurityContext != nil || pod.Spec.RuntimeClassName != nil {
		t.Errorf("pod securityContext %+v, runtimeClassName %v: want none (runtime.class selects no handler in a cell)", pod.Spec.SecurityContext, pod.Spec.RuntimeClassName)
	}
	wantRefs := []reference{{kind: referenceddata.KindConfigMap, object: "configmap.app", source: "app"}}
	if diff := cmp.Diff(wantRefs, references(inst, pod), cmp.AllowUnexported(reference{})); diff != "" {
		t.Errorf("references: the envFrom ConfigMap, not the optional Secret (-want +got):\n%s", diff)
	}
	plain, err := podFor(makeInst().container(computev1alpha.SandboxContainer{Name: "side", Image: "ghcr.io/x/side:1"}).build(), 1)
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.Containers[0].EnvFrom, pod.Spec.Containers[0].SecurityContext = nil, nil
	if diff := cmp.Diff(plain.Spec, pod.Spec); diff != "" {
		t.Errorf("the class and the interface fields changed the Pod (-without +with):\n%s", diff)
	}
}

func TestPodForProbes(t *testing.T) {
	inst := makeInst().first(func(c *computev1alpha.SandboxContainer) {
		c.Ports = []computev1alpha.NamedPort{{Name: "http", Port: 8080}}
		c.ReadinessProbe = &computev1alpha.Probe{HTTPGet: &computev1alpha.HTTPGetProbe{Path: "/healthz", Port: intstr.FromString("http"),
			HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "1"}}}, PeriodSeconds: 2, FailureThreshold: 1}
		c.LivenessProbe = &computev1alpha.Probe{TCPSocket: &computev1alpha.TCPSocketProbe{Port: intstr.FromInt32(8080)},
			InitialDelaySeconds: 5, TerminationGracePeriodSeconds: ptr.To[int64](3)}
		c.StartupProbe = &computev1alpha.Probe{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/started"}}, FailureThreshold: 30}
	}).build()
	pod, err := podFor(inst, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	want := []*corev1.Probe{
		{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080),
			HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "1"}}}}, PeriodSeconds: 2, FailureThreshold: 1},
		{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
			InitialDelaySeconds: 5, TerminationGracePeriodSeconds: ptr.To[int64](3)},
		{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/started"}}}, FailureThreshold: 30},
	}
	if diff := cmp.Diff(want, []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe}); diff != "" {
		t.Errorf("probes, the port name resolved to its number and never a host (-want +got):\n%s", diff)
	}
	plain, err := podFor(makeInst().build(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if p := plain.Spec.Containers[0]; p.ReadinessProbe != nil || p.LivenessProbe != nil || p.StartupProbe != nil {
		t.Errorf("a container without probes got some: %+v %+v %+v", p.ReadinessProbe, p.LivenessProbe, p.StartupProbe)
	}
}

func TestPodForRefuses(t *testing.T) {
	tests := map[string]struct {
		inst *computev1alpha.Instance
		want string
	}{
		"a virtual machine": {
			inst: makeInst().vm().build(),
			want: "the kubernetes runtime provider runs containers only",
		},
		"a disk attached to a container": {
			inst: makeInst().volume(computev1alpha.InstanceVolume{Name: "data", Disk: &computev1alpha.DiskTemplateVolumeSource{}}, "/data").build(),
			want: `container "app" attaches disk volume "data"`,
		},
		"an environment variable read from a pod field": {
			inst: makeInst().first(func(c *computev1alpha.SandboxContainer) {
				c.Env = []computev1alpha.EnvVar{{Name: "NODE", ValueFrom: &computev1alpha.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
			}).build(),
			want: `environment variable "NODE" of container "app" reads a pod field`,
		},
		"an unknown instance type with a container left to size": {
			inst: makeInst().with(func(i *computev1alpha.Instance) { i.Spec.Runtime.Resources.InstanceType = "datumcloud/x" }).build(),
			want: `instance type "datumcloud/x" is not in the catalog`,
		},
		"containers whose own limits take the whole instance": {
			inst: makeInst().container(computev1alpha.SandboxContainer{Name: "big", Image: "b",
				Resources: &computev1alpha.ContainerResourceRequirements{Limits: res("1", "128Mi")}}).build(),
			want: `spec.runtime.sandbox.containers[1].resources.limits.cpu: container "big" asks for 1 cpu, which leaves less than`,
		},
		"an envFrom source naming nothing": {
			inst: makeInst().first(func(c *computev1alpha.SandboxContainer) {
				c.EnvFrom = []computev1alpha.EnvFromSource{{Prefix: "X_"}}
			}).build(),
			want: `an envFrom source of container "app" names no ConfigMap or Secret`,
		},
		// The cell does not trust the template: what the project plane's
		// admission refuses is refused here too, for a plane without
		// compute's webhooks.
		"a capability outside the grant (SYS_ADMIN on a shared kernel)": {
			inst: makeInst().first(func(c *computev1alpha.SandboxContainer) {
				c.SecurityContext = &computev1alpha.SecurityContext{Capabilities: &computev1alpha.Capabilities{Add: []computev1alpha.Capability{"CAP_SYS_ADMIN"}}}
			}).build(),
			want: `container "app" adds capability SYS_ADMIN, which instances sharing this cell's kernel may not have`,
		},
		"every capability": {
			inst: makeInst().first(func(c *computev1alpha.SandboxContainer) {
				c.SecurityContext = &computev1alpha.SecurityContext{Capabilities: &computev1alpha.Capabilities{Add: []computev1alpha.Capability{"ALL"}}}
			}).build(),
			want: `adds capability ALL`,
		},
		"an unconfined seccomp profile": {
			inst: makeInst().first(func(c *computev1alpha.SandboxContainer) {
				c.SecurityContext = &computev1alpha.SecurityContext{SeccompProfile: &computev1alpha.SeccompProfile{Type: computev1alpha.SeccompProfileTypeUnconfined}}
			}).build(),
			want: `container "app" asks for seccomp profile Unconfined`,
		},
		"a probe on a port the container does not declare": {
			inst: makeInst().first(func(c *computev1alpha.SandboxContainer) {
				c.ReadinessProbe = &computev1alpha.Probe{TCPSocket: &computev1alpha.TCPSocketProbe{Port: intstr.FromString("admin")}}
			}).build(),
			want: `the readiness probe of container "app" names port "admin", which the container does not declare`,
		},
		"a probe with no check": {
			inst: makeInst().first(func(c *computev1alpha.SandboxContainer) {
				c.LivenessProbe = &computev1alpha.Probe{PeriodSeconds: 3}
			}).build(),
			want: `container "app" has a liveness probe with no check`,
		},
		"a mount of a volume that does not exist": {
			inst: makeInst().first(func(c *computev1alpha.SandboxContainer) {
				c.VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "nope", MountPath: ptr.To("/x")}}
			}).build(),
			want: `container "app" attaches volume "nope", which the instance does not define`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod, err := podFor(tc.inst, 1)
			if err == nil {
				t.Fatalf("podFor() = %v, want an error mentioning %q", pod.Spec, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// TestAPodReadsTheCompanionOfTheLongestDeliverableName: admission refuses
// longer names, whose companion name would not be a valid object name.
func TestAPodReadsTheCompanionOfTheLongestDeliverableName(t *testing.T) {
	long := strings.Repeat("s", referenceddata.MaxNameLength)
	inst := makeInst().build()
	inst.Spec.Runtime.Sandbox.ImagePullSecrets = []computev1alpha.LocalSecretReference{{Name: long}}
	pod, err := podFor(inst, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := referenceddata.CompanionName(referenceddata.KindSecret, long)
	if len(want) > 253 || pod.Spec.ImagePullSecrets[0].Name != want {
		t.Errorf("image pull secret %q, want the companion %q", pod.Spec.ImagePullSecrets[0].Name, want)
	}
	refs := references(inst, pod)
	if len(refs) != 1 || refs[0].object != want || refs[0].source != long {
		t.Errorf("references = %+v, want the companion carrying the project's %q", refs, long)
	}
}

func TestLabelValue(t *testing.T) {
	long := strings.Repeat("web-", 16) + "0"
	tests := map[string]struct {
		name, want string
	}{
		"a short name is itself":                            {name: "web-0", want: "web-0"},
		"a name of 63 characters is itself":                 {name: strings.Repeat("a", 63), want: strings.Repeat("a", 63)},
		"a longer name is shortened, with a hash of it all": {name: long, want: long[:54] + "-" + labelValue(long)[55:]},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := labelValue(tc.name)
			if got != tc.want {
				t.Errorf("labelValue(%q) = %q, want %q", tc.name, got, tc.want)
			}
			if msgs := validation.IsValidLabelValue(got); len(msgs) > 0 {
				t.Errorf("labelValue(%q) = %q is no label value: %v", tc.name, got, msgs)
			}
		})
	}
	if labelValue(long) == labelValue(long+"1") {
		t.Error("two long names that differ after the cut get the same label value")
	}
}

func TestPodForTellsEveryContainerItsInstanceAndCityBeforeItsOwnEnv(t *testing.T) {
	inst := makeInst().container(computev1alpha.SandboxContainer{Name: "b", Image: "b",
		Env: []computev1alpha.EnvVar{{Name: "COMPUTE_CITY_CODE", Value: "mine"}}}).build()
	inst.Labels = map[string]string{computev1alpha.CityCodeLabel: "DFW"}
	pod, err := podFor(inst, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]corev1.EnvVar{
		{{Name: "COMPUTE_INSTANCE_NAME", Value: inst.Name}, {Name: "COMPUTE_CITY_CODE", Value: "DFW"}},
		// The template's own variable comes last, so it wins.
		{{Name: "COMPUTE_INSTANCE_NAME", Value: inst.Name}, {Name: "COMPUTE_CITY_CODE", Value: "DFW"}, {Name: "COMPUTE_CITY_CODE", Value: "mine"}},
	}
	for i, c := range pod.Spec.Containers {
		if diff := cmp.Diff(want[i], c.Env); diff != "" {
			t.Errorf("container %s env (-want +got):\n%s", c.Name, diff)
		}
	}
}
