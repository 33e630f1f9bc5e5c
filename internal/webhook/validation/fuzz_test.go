package validation

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/quota/sizing"
)

// corev1Protocol converts a fuzzed string to a protocol.
func corev1Protocol(s string) corev1.Protocol { return corev1.Protocol(s) }

// seedWorkloads are valid and invalid Workloads the fuzzers start from; the
// committed corpus in testdata/fuzz holds more.
func seedWorkloads(t testing.TB) [][]byte {
	ws := []*computev1alpha.Workload{
		makeWorkload().build(),
		makeWorkload().withVolume(disk("boot", "ubuntu")).asVirtualMachine("boot").build(),
		makeWorkload().withVolume(configMap("conf", "c")).withMount("conf", "/etc/c").withContainer(computev1alpha.SandboxContainer{
			Name: "side", Image: "envoy", Ports: []computev1alpha.NamedPort{{Name: "admin", Port: 9901, Protocol: "UDP"}},
			Env: []computev1alpha.EnvVar{{Name: "A", Value: "b"}},
		}).build(),
		makeWorkload().withRollout(computev1alpha.WorkloadRollout{
			Strategy: computev1alpha.WavesCityRollout, Waves: wavesOf([]string{"DFW"}, []string{"LHR", "DFW", "xx"}),
		}).build(),
		makeWorkload().withRollout(computev1alpha.WorkloadRollout{
			Strategy: computev1alpha.CanaryCityRollout,
			Canary:   &computev1alpha.CanaryRollout{CityCode: "LHR", WaveSize: ptr.To(intstr.FromString("33%"))},
		}).build(),
	}
	ws = append(ws, datumSeeds()...)
	ws = append(ws, sizeSeeds()...)
	out := make([][]byte, 0, len(ws))
	for _, w := range ws {
		b, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// datumSeeds are Workloads in Datum's shapes: every new field set, valid
// and invalid, and the first volume shape that defaulting moves.
func datumSeeds() []*computev1alpha.Workload {
	full := makeWorkload().withVolume(secret("creds", "db")).withVolume(configMap("conf", "app")).withVolume(disk("data", "")).
		withMount("creds", "/etc/creds").withMount("conf", "/etc/app").withMount("data", "").with(func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Volumes[0].Secret.Items = []corev1.KeyToPath{{Key: "k", Path: "a/b", Mode: ptr.To[int32](0o400)}}
		w.Spec.Template.Spec.Volumes[1].ConfigMap.DefaultMode = ptr.To[int32](0o644)
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Env = []computev1alpha.EnvVar{secretEnv("P", "db", "password")}
		w.Spec.Placements[0].ScaleSettings.MaxReplicas = ptr.To[int32](4)
		w.Spec.Placements[0].ScaleSettings.Metrics = []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](70)}}}}
	}).with(withPolicy(computev1alpha.NetworkPolicyIngressRule{
		Ports: []computev1alpha.NetworkPolicyPort{policyPort(intstr.FromInt32(8000), ptr.To[int32](8100)), policyPort(intstr.FromString("http"), nil)},
		From:  []computev1alpha.NetworkPolicyPeer{from("10.0.0.0/8", "10.1.0.0/16"), from("2001:db8::/32")},
	})).build()
	bad := makeWorkload().withVolume(computev1alpha.InstanceVolume{Name: "x", Secret: &computev1alpha.SecretVolumeSource{Name: "a", SecretName: "b"},
		ConfigMap: &computev1alpha.ConfigMapVolumeSource{Items: []corev1.KeyToPath{{Key: "", Path: "../x"}}}}).with(withPolicy(computev1alpha.NetworkPolicyIngressRule{
		Ports: []computev1alpha.NetworkPolicyPort{policyPort(intstr.FromString("http"), ptr.To[int32](1)), {EndPort: ptr.To[int32](0)}},
		From:  []computev1alpha.NetworkPolicyPeer{from("10.0.0.0/33", "::/0"), {}},
	})).build()
	legacy := makeWorkload().withVolume(computev1alpha.InstanceVolume{Name: "boot", Disk: &computev1alpha.DiskTemplateVolumeSource{
		Image: "ubuntu", Size: ptr.To(resource.MustParse("20Gi")), Type: "pd-ssd"}}).asVirtualMachine("boot").build()
	return append([]*computev1alpha.Workload{full, bad, legacy}, addedFieldSeeds()...)
}

// addedFieldSeeds are Workloads with the fields Datum added later (envFrom,
// securityContext, runtime.class, the interface name, address families,
// address requests and reclaim policy), valid and invalid.
func addedFieldSeeds() []*computev1alpha.Workload {
	good := makeWorkload().with(func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Class = "general-purpose"
		c := &w.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
		c.EnvFrom = []computev1alpha.EnvFromSource{
			{ConfigMapRef: &computev1alpha.ConfigMapEnvSource{Name: "app"}},
			{Prefix: "DB_", SecretRef: &computev1alpha.SecretEnvSource{Name: "db", Optional: ptr.To(true)}},
		}
		c.SecurityContext = &computev1alpha.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &computev1alpha.Capabilities{Add: []computev1alpha.Capability{"NET_BIND_SERVICE"}, Drop: []computev1alpha.Capability{"ALL"}},
			SeccompProfile:           &computev1alpha.SeccompProfile{Type: computev1alpha.SeccompProfileTypeRuntimeDefault},
		}
	}).with(withInterfaces(
		computev1alpha.InstanceNetworkInterface{Name: "eth0", IPFamilies: []computev1alpha.IPFamily{"IPv6", "IPv4"}, ReclaimPolicy: "Retain",
			Addresses: []computev1alpha.InstanceNetworkInterfaceAddressRequest{{Class: "public-ipv4"}}},
		computev1alpha.InstanceNetworkInterface{Name: "eth1"},
	)).build()
	bad := makeWorkload().with(func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Class = "Not A Class"
		c := &w.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
		c.EnvFrom = []computev1alpha.EnvFromSource{{Prefix: "1x"}, {ConfigMapRef: &computev1alpha.ConfigMapEnvSource{}, SecretRef: &computev1alpha.SecretEnvSource{Name: "A"}}}
		c.SecurityContext = &computev1alpha.SecurityContext{
			Capabilities:   &computev1alpha.Capabilities{Add: []computev1alpha.Capability{"ALL", "SYS_ADMIN", "CAP_CHOWN", "CHOWN"}, Drop: []computev1alpha.Capability{"", "net_raw"}},
			SeccompProfile: &computev1alpha.SeccompProfile{Type: "Localhost"},
		}
	}).with(withInterfaces(
		computev1alpha.InstanceNetworkInterface{IPFamilies: []computev1alpha.IPFamily{"IPv4", "IPv4", "IPv5"}, ReclaimPolicy: "Recycle",
			Addresses: []computev1alpha.InstanceNetworkInterfaceAddressRequest{{}, {Class: "x"}, {Class: "x"}}},
		computev1alpha.InstanceNetworkInterface{},
		computev1alpha.InstanceNetworkInterface{Name: "an-interface-name-too-long"},
	)).build()
	return []*computev1alpha.Workload{good, bad}
}

// sizeSeeds are Workloads whose containers state their sizes: within the
// type, over it alone or together, leaving nothing for another, with and
// without runtime requests.
func sizeSeeds() []*computev1alpha.Workload {
	side := func(r *computev1alpha.ContainerResourceRequirements) computev1alpha.SandboxContainer {
		return computev1alpha.SandboxContainer{Name: "side", Image: "envoy", Resources: r}
	}
	return []*computev1alpha.Workload{
		makeWorkload().with(withResources(sized("", "", "500m", "1Gi"))).build(),
		makeWorkload().with(withResources(sized("", "", "16", "64Gi"))).build(),
		makeWorkload().with(withResources(sized("750m", "1Gi", "250m", "512Mi"))).withContainer(side(sized("", "1025Mi", "300m", ""))).build(),
		makeWorkload().withContainer(side(sized("1", "", "", "2Gi"))).build(),
		makeWorkload().with(withResources(sized("", "", "3", "8E"))).with(func(w *computev1alpha.Workload) {
			w.Spec.Template.Spec.Runtime.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
		}).build(),
	}
}

// checkErrors asserts what every validation result must satisfy.
func checkErrors(t *testing.T, errs field.ErrorList) {
	t.Helper()
	for _, e := range errs {
		if !strings.HasPrefix(e.Field, "spec.") && e.Field != "spec" && e.Field != "metadata.name" {
			t.Fatalf("error %q points outside the Workload's spec and name", e.Error())
		}
		if e.Detail == "" && e.Type != field.ErrorTypeDuplicate && e.Type != field.ErrorTypeNotFound &&
			e.Type != field.ErrorTypeNotSupported && e.Type != field.ErrorTypeTooMany && e.Type != field.ErrorTypeTooLong {
			t.Fatalf("error %q has no detail", e.Error())
		}
	}
}

// FuzzValidateWorkload checks that defaulting and create validation never
// panic, that defaulting is idempotent, that validation is deterministic
// and that every error points into the Workload.
func FuzzValidateWorkload(f *testing.F) {
	for _, b := range seedWorkloads(f) {
		f.Add(b)
	}
	env := bound("DFW", "LHR", "SIN")
	f.Fuzz(func(t *testing.T, data []byte) {
		var w computev1alpha.Workload
		if err := json.Unmarshal(data, &w); err != nil {
			return
		}
		DefaultWorkload(&w)
		again := w.DeepCopy()
		DefaultWorkload(again)
		if diff := cmp.Diff(&w, again); diff != "" {
			t.Fatalf("defaulting is not idempotent (-once +twice):\n%s", diff)
		}
		errs := ValidateWorkloadCreate(&w, env)
		checkErrors(t, errs)
		if diff := cmp.Diff(errs.ToAggregate(), ValidateWorkloadCreate(&w, env).ToAggregate()); errs != nil && diff != "" {
			t.Fatalf("validation is not deterministic:\n%s", diff)
		}
		_ = UnusedVolumes(&w.Spec.Template.Spec)
		// What admission lets through, the cells can size: the quota
		// claim and the Pod are never refused as too large.
		if rt := &w.Spec.Template.Spec.Runtime; len(errs) == 0 && rt.Sandbox != nil {
			if _, err := sizing.Resolve(rt, env.InstanceTypes); err != nil {
				t.Fatalf("admitted, but the cells cannot size it: %v", err)
			}
		}
	})
}

// FuzzValidateWorkloadUpdate checks that update validation never panics,
// accepts an unchanged spec and keeps its errors inside the Workload.
func FuzzValidateWorkloadUpdate(f *testing.F) {
	seeds := seedWorkloads(f)
	for _, a := range seeds {
		for _, b := range seeds {
			f.Add(a, b)
		}
	}
	env := bound("DFW", "LHR")
	f.Fuzz(func(t *testing.T, oldData, newData []byte) {
		var old, w computev1alpha.Workload
		if json.Unmarshal(oldData, &old) != nil || json.Unmarshal(newData, &w) != nil {
			return
		}
		checkErrors(t, ValidateWorkloadUpdate(&w, &old, env))
		if errs := ValidateWorkloadUpdate(old.DeepCopy(), &old, env); len(errs) != 0 {
			t.Fatalf("an update that changes nothing is rejected: %v", errs)
		}
	})
}

// FuzzValidateFields drives the field rules with arbitrary values in a
// valid Workload: a JSON fuzzer rarely gets past the decoder, this one
// reaches every rule.
func FuzzValidateFields(f *testing.F) {
	f.Add("web", "edge", "DFW", "nginx:1", "app", "http", int32(8080), "TCP", int32(2), "datumcloud/d1-standard-2", "/data", "HOME", "2026-05-01T12:00:00Z")
	f.Add("Web", "", "dfw", " ", "-", "", int32(0), "HTTP", int32(-1), "", "data", "1A", "now")
	env := bound("DFW", "LHR")
	f.Fuzz(func(t *testing.T, name, placement, city, image, container, portName string, port int32, protocol string,
		minReplicas int32, instanceType, mountPath, envName, restartedAt string) {
		w := makeWorkload().withVolume(configMap("conf", "c")).withMount("conf", mountPath).with(func(w *computev1alpha.Workload) {
			w.Name = name
			w.Spec.Placements[0].Name = placement
			w.Spec.Placements[0].CityCodes = []string{city, "LHR"}
			w.Spec.Placements[0].ScaleSettings.MinReplicas = minReplicas
			w.Spec.Template.Metadata.Annotations = map[string]string{computev1alpha.RestartedAtAnnotation: restartedAt}
			w.Spec.Template.Spec.Runtime.Resources.InstanceType = instanceType
			c := &w.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
			c.Name, c.Image = container, image
			c.Ports = []computev1alpha.NamedPort{{Name: portName, Port: port, Protocol: corev1Protocol(protocol)}}
			c.Env = []computev1alpha.EnvVar{{Name: envName}}
		}).build()
		old := w.DeepCopy()
		DefaultWorkload(w)
		errs := ValidateWorkloadCreate(w, env)
		checkErrors(t, errs)
		checkErrors(t, ValidateWorkloadUpdate(w, old, env))
	})
}

// FuzzValidateDatumFields drives the rules of Datum's shapes with arbitrary
// values: network policy ports, ranges and CIDRs, Secret and ConfigMap
// references and items, disk populators and metric targets.
func FuzzValidateDatumFields(f *testing.F) {
	f.Add(int32(8000), int32(8100), "http", "TCP", "10.0.0.0/8", "10.1.0.0/16", "db-creds", "password", "a/b", int32(0o400), "ubuntu", "ext4", "cpu", int32(70))
	f.Add(int32(0), int32(-1), "", "ICMP", "10.0.0.0/33", "::/0", "", "", "../x", int32(0o1777), "", "xfs", "gpu", int32(0))
	f.Add(int32(65535), int32(65536), "a-very-long-port-name", "", "2001:db8::/32", "2001:db8::/48", "Bad_Name", "k/k", "/abs", int32(-1), " x", "", "memory", int32(-5))
	env := bound("DFW", "LHR")
	f.Fuzz(func(t *testing.T, port, endPort int32, portName, protocol, cidr, except, secretName, key, itemPath string, mode int32,
		image, filesystem, metric string, utilization int32) {
		proto := corev1.Protocol(protocol)
		w := makeWorkload().withVolume(computev1alpha.InstanceVolume{Name: "creds", Secret: &computev1alpha.SecretVolumeSource{
			SecretName: secretName, DefaultMode: &mode, Items: []corev1.KeyToPath{{Key: key, Path: itemPath, Mode: &mode}},
		}}).withVolume(disk("boot", image)).withMount("creds", "/etc/creds").with(func(w *computev1alpha.Workload) {
			w.Spec.Template.Spec.Volumes[1].Disk.Template.Spec.Populator = &computev1alpha.DiskPopulator{
				Image: &computev1alpha.ImageDiskPopulator{Name: image}, Filesystem: &computev1alpha.FilesystemDiskPopulator{Type: filesystem}}
			w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Env = []computev1alpha.EnvVar{secretEnv("FROM_SECRET", secretName, key)}
			w.Spec.Placements[0].ScaleSettings.Metrics = []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{
				Name: corev1.ResourceName(metric), Target: computev1alpha.MetricTarget{AverageUtilization: &utilization}}}}
		}).with(withPolicy(computev1alpha.NetworkPolicyIngressRule{
			Ports: []computev1alpha.NetworkPolicyPort{
				{Protocol: &proto, Port: ptr.To(intstr.FromInt32(port)), EndPort: &endPort},
				policyPort(intstr.FromString(portName), &endPort),
			},
			From: []computev1alpha.NetworkPolicyPeer{from(cidr, except, cidr)},
		})).build()
		old := w.DeepCopy()
		DefaultWorkload(w)
		errs := ValidateWorkloadCreate(w, env)
		checkErrors(t, errs)
		checkErrors(t, ValidateWorkloadUpdate(w, old, env))
	})
}

// FuzzValidateAddedFields drives the rules of the fields Datum added later
// with arbitrary values: envFrom prefixes and names, capabilities, the
// seccomp profile, the runtime class and the interface name, address
// families, address class and reclaim policy.
func FuzzValidateAddedFields(f *testing.F) {
	f.Add("DB_", "app", "db", "NET_BIND_SERVICE", "ALL", "RuntimeDefault", "general-purpose", "eth0", "IPv6", "IPv4", "public-ipv4", "Retain")
	f.Add("1-x", "", "Bad_Name", "ALL", "net raw", "Localhost", "Not A Class", "", "IPv4", "IPv4", "", "Recycle")
	f.Add("", "a", "b", "CAP_SYS_ADMIN", "CAP_", "", "x", "an-interface-name-too-long", "", "IPv5", "x_y", "")
	env := bound("DFW", "LHR")
	f.Fuzz(func(t *testing.T, prefix, configMap, secret, add, drop, seccomp, class, nicName, family1, family2, addressClass, reclaim string) {
		w := makeWorkload().with(func(w *computev1alpha.Workload) {
			w.Spec.Template.Spec.Runtime.Class = class
			c := &w.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
			c.EnvFrom = []computev1alpha.EnvFromSource{
				{Prefix: prefix, ConfigMapRef: &computev1alpha.ConfigMapEnvSource{Name: configMap}},
				{SecretRef: &computev1alpha.SecretEnvSource{Name: secret}},
			}
			c.SecurityContext = &computev1alpha.SecurityContext{
				Capabilities:   &computev1alpha.Capabilities{Add: []computev1alpha.Capability{computev1alpha.Capability(add)}, Drop: []computev1alpha.Capability{computev1alpha.Capability(drop)}},
				SeccompProfile: &computev1alpha.SeccompProfile{Type: computev1alpha.SeccompProfileType(seccomp)},
			}
		}).with(withInterfaces(computev1alpha.InstanceNetworkInterface{
			Name:          nicName,
			IPFamilies:    []computev1alpha.IPFamily{computev1alpha.IPFamily(family1), computev1alpha.IPFamily(family2)},
			Addresses:     []computev1alpha.InstanceNetworkInterfaceAddressRequest{{Class: addressClass}},
			ReclaimPolicy: computev1alpha.NetworkInterfaceReclaimPolicy(reclaim),
		})).build()
		old := w.DeepCopy()
		DefaultWorkload(w)
		errs := ValidateWorkloadCreate(w, env)
		checkErrors(t, errs)
		checkErrors(t, ValidateWorkloadUpdate(w, old, env))
	})
}

// FuzzValidateAutoscaling drives the autoscaling rules with arbitrary
// bounds and targets: validation never panics, its errors point into the
// placement's scaleSettings, and what it accepts autoscales exactly when
// maxReplicas is set, each metric on cpu or memory with one positive
// average target.
func FuzzValidateAutoscaling(f *testing.F) {
	f.Add(int32(1), int32(4), true, "cpu", "", "", int32(50), true)
	f.Add(int32(2), int32(1), true, "memory", "", "512Mi", int32(0), false)
	f.Add(int32(0), int32(0), false, "gpu", "2", "-1", int32(1001), true)
	f.Add(int32(-1), int32(1001), true, "", "0", "0", int32(-5), true)
	env := bound("DFW", "LHR")
	f.Fuzz(func(t *testing.T, minReplicas, maxReplicas int32, hasMax bool, name, value, averageValue string, utilization int32, hasUtilization bool) {
		target := computev1alpha.MetricTarget{Value: quantity(value), AverageValue: quantity(averageValue)}
		if hasUtilization {
			target.AverageUtilization = &utilization
		}
		w := makeWorkload().with(func(w *computev1alpha.Workload) {
			s := &w.Spec.Placements[0].ScaleSettings
			s.MinReplicas = minReplicas
			if hasMax {
				s.MaxReplicas = &maxReplicas
			}
			if name != "" {
				s.Metrics = []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{Name: corev1.ResourceName(name), Target: target}}}
			}
		}).build()
		DefaultWorkload(w)
		errs := ValidateWorkloadCreate(w, env)
		checkErrors(t, errs)
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "spec.placements[0].scaleSettings.") {
				t.Fatalf("error %q points outside the scale settings the fuzzer changed", e.Error())
			}
		}
		if len(errs) > 0 {
			return
		}
		s := w.Spec.Placements[0].ScaleSettings
		if s.Autoscales() != hasMax || hasMax && maxReplicas < minReplicas {
			t.Fatalf("accepted %+v: autoscales=%t with maxReplicas set=%t", s, s.Autoscales(), hasMax)
		}
		for _, m := range s.Metrics {
			tg := m.Resource.Target
			if tg.Value != nil || (tg.AverageValue == nil) == (tg.AverageUtilization == nil) ||
				tg.AverageValue != nil && tg.AverageValue.Sign() <= 0 || tg.AverageUtilization != nil && *tg.AverageUtilization < 1 {
				t.Fatalf("accepted the target %+v", tg)
			}
		}
	})
}

// quantity parses s, nil when it is empty or not a quantity.
func quantity(s string) *resource.Quantity {
	q, err := resource.ParseQuantity(s)
	if s == "" || err != nil {
		return nil
	}
	return &q
}
