package kubernetes

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/quota"
	"github.com/citycells/compute/internal/quota/sizing"
)

// seedInstances are the Instances the fuzzers start from: valid ones, and
// ones full of nil and empty fields admission would refuse.
func seedInstances(t testing.TB) [][]byte {
	insts := []*computev1alpha.Instance{
		makeInst().build(),
		makeInst().vm().build(),
		makeInst().container(computev1alpha.SandboxContainer{Name: "side", Image: "envoy",
			Resources: &computev1alpha.ContainerResourceRequirements{Limits: res("100m", "64Mi")}}).
			volume(computev1alpha.InstanceVolume{Name: "conf", ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: "app", Optional: ptr.To(true)}}, "/etc/app").
			volume(computev1alpha.InstanceVolume{Name: "creds", Secret: &computev1alpha.SecretVolumeSource{Name: "db"}}, "/etc/creds").
			first(func(c *computev1alpha.SandboxContainer) {
				c.Env = []computev1alpha.EnvVar{{Name: "A", ValueFrom: &computev1alpha.EnvVarSource{}}, {Name: "B", ValueFrom: &computev1alpha.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
				c.Ports = []computev1alpha.NamedPort{{Name: "http", Port: 80}}
			}).build(),
		makeInst().with(func(i *computev1alpha.Instance) {
			i.Spec.Runtime.Class = "general-purpose"
			i.Spec.NetworkInterfaces = []computev1alpha.InstanceNetworkInterface{{Name: "eth0", IPFamilies: []computev1alpha.IPFamily{"IPv6", "IPv4"},
				ReclaimPolicy: "Retain", Addresses: []computev1alpha.InstanceNetworkInterfaceAddressRequest{{Class: "public-ipv4"}}}}
		}).first(func(c *computev1alpha.SandboxContainer) {
			c.EnvFrom = []computev1alpha.EnvFromSource{{Prefix: "A_", ConfigMapRef: &computev1alpha.ConfigMapEnvSource{Name: "app"}},
				{SecretRef: &computev1alpha.SecretEnvSource{Name: "db", Optional: ptr.To(true)}}, {}}
			c.SecurityContext = &computev1alpha.SecurityContext{AllowPrivilegeEscalation: ptr.To(true),
				Capabilities:   &computev1alpha.Capabilities{Add: []computev1alpha.Capability{"CAP_CHOWN", ""}, Drop: []computev1alpha.Capability{"ALL"}},
				SeccompProfile: &computev1alpha.SeccompProfile{Type: "Unconfined"}}
		}).build(),
	}
	out := make([][]byte, 0, len(insts)+4)
	for _, i := range insts {
		b, err := json.Marshal(i)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return append(out,
		[]byte(`{}`),
		[]byte(`{"spec":{"runtime":{"sandbox":{}}}}`),
		[]byte(`{"spec":{"runtime":{"sandbox":{"containers":[{"resources":{}},{"resources":{"limits":{"cpu":"0"}}}]},"resources":{"instanceType":""}},"volumes":[{"name":"v"},{"name":"v","configMap":{}}]}}`),
		[]byte(`{"spec":{"runtime":{"sandbox":{"containers":[{"envFrom":[{"configMapRef":{}},{"secretRef":{"name":""}}],"securityContext":{"capabilities":{}}}]}}}}`),
		[]byte(`{"spec":{"runtime":{"resources":{"requests":{"cpu":"-1","memory":"1"}},"sandbox":{"containers":[{"volumeAttachments":[{"name":"v"}]},{}],"imagePullSecrets":[{}]}},"volumes":[{"name":"v","disk":{}}]}}`),
	)
}

// FuzzPodFor checks that the builder never panics, whatever the Instance
// and allocation ratio, and that a Pod it builds is one the provider can
// find and own, requesting no more than its limits, which add up to the
// Instance's quota claim.
func FuzzPodFor(f *testing.F) {
	for i, s := range seedInstances(f) {
		f.Add(s, []float64{1, 32, 0, 2.5}[i%4])
	}
	f.Fuzz(func(t *testing.T, data []byte, ratio float64) {
		inst := &computev1alpha.Instance{}
		if err := json.Unmarshal(data, inst); err != nil {
			return
		}
		pod, err := podFor(inst, ratio)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a refusal must say why")
			}
			return
		}
		if msgs := validation.IsValidLabelValue(pod.Labels[InstanceLabel]); len(msgs) > 0 {
			t.Fatalf("label %s=%q is no label value: %v", InstanceLabel, pod.Labels[InstanceLabel], msgs)
		}
		if !ownedBy(pod, inst) || pod.Name != inst.Name || pod.Namespace != inst.Namespace {
			t.Fatalf("the pod %s/%s is not the instance's", pod.Namespace, pod.Name)
		}
		if len(pod.Spec.Containers) != len(inst.Spec.Runtime.Sandbox.Containers) {
			t.Fatalf("%d containers for %d", len(pod.Spec.Containers), len(inst.Spec.Runtime.Sandbox.Containers))
		}
		for _, c := range pod.Spec.Containers {
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, lim := c.Resources.Requests[name], c.Resources.Limits[name]
				if req.Sign() <= 0 || req.Cmp(lim) > 0 || !(ratio > 1) && req.Cmp(lim) != 0 {
					t.Fatalf("container %q at ratio %g: %s request %s, limit %s; want positive, at most the limit, equal at ratio 1",
						c.Name, ratio, name, req.String(), lim.String())
				}
			}
		}
		// The Pod gets what the quota claims: one size (sizing.Resolve).
		claim, err := quota.BuildClaim(inst, testTypes, quota.Target{Project: "p", Namespace: "ns"}, "cell")
		if err != nil {
			t.Fatalf("the Pod was built but the claim refused: %v", err)
		}
		var cpu, mem int64
		for _, c := range pod.Spec.Containers {
			cpu += c.Resources.Limits.Cpu().MilliValue()
			mem += c.Resources.Limits.Memory().Value()
		}
		if claimed(claim, computev1alpha.ResourceTypeVCPUs) != cpu || claimed(claim, computev1alpha.ResourceTypeMemory)*sizing.Mebibyte != mem {
			t.Fatalf("the claim %v is not the Pod's limits (%dm, %d bytes)", claim.Spec.Requests, cpu, mem)
		}
		_ = references(inst, pod)
		// Deciding about the Pod it built, in any state, never panics.
		decide(inst, observation{pod: pod}, time.Second)
	})
}

// FuzzPodConditions checks that deciding from any Pod never panics and
// always reports both conditions with a reason.
func FuzzPodConditions(f *testing.F) {
	for _, p := range []*corev1.Pod{
		makePod().build(),
		makePod().on("n").running(true).build(),
		makePod().on("n").running(false).container(crashed(3, 4)).build(),
		makePod().on("n").phase(corev1.PodUnknown).build(),
		{},
	} {
		b, err := json.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"spec":{"nodeName":"n"},"status":{"conditions":[{"type":"Ready"}],"containerStatuses":[{"state":{"waiting":{}}},{"lastState":{"terminated":{}},"restartCount":1}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		pod := &corev1.Pod{}
		if err := json.Unmarshal(data, pod); err != nil {
			return
		}
		programmed, available := podConditions(pod)
		if programmed.Reason == "" || available.Reason == "" {
			t.Fatalf("a condition without a reason: %+v %+v", programmed, available)
		}
		decide(makeInst().build(), observation{pod: pod}, time.Second)
	})
}
