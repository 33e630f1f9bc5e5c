package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

const c0 = "spec.template.spec.runtime.sandbox.containers[0]"

// withInterfaces gives the Workload the interfaces nics, each on its own
// network.
func withInterfaces(nics ...computev1alpha.InstanceNetworkInterface) func(*computev1alpha.Workload) {
	return func(w *computev1alpha.Workload) {
		for i := range nics {
			if nics[i].Network.Name == "" {
				nics[i].Network.Name = "net-" + string(rune('a'+i))
			}
		}
		w.Spec.Template.Spec.NetworkInterfaces = nics
	}
}

func TestValidateTemplateFieldsDatumAdded(t *testing.T) {
	env := bound("DFW", "LHR")
	cm := func(name string) *computev1alpha.ConfigMapEnvSource {
		return &computev1alpha.ConfigMapEnvSource{Name: name}
	}
	sec := func(name string) *computev1alpha.SecretEnvSource { return &computev1alpha.SecretEnvSource{Name: name} }
	envFrom := func(s ...computev1alpha.EnvFromSource) func(*computev1alpha.Workload) {
		return func(w *computev1alpha.Workload) { w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].EnvFrom = s }
	}
	security := func(sc computev1alpha.SecurityContext) func(*computev1alpha.Workload) {
		return func(w *computev1alpha.Workload) {
			w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].SecurityContext = &sc
		}
	}
	caps := func(add, drop []computev1alpha.Capability) computev1alpha.SecurityContext {
		return computev1alpha.SecurityContext{Capabilities: &computev1alpha.Capabilities{Add: add, Drop: drop}}
	}
	nic := computev1alpha.InstanceNetworkInterface{}
	tests := map[string]struct {
		change func(*computev1alpha.Workload)
		want   []violation
	}{
		"envFrom of a ConfigMap and a Secret with a prefix is accepted": {
			change: envFrom(computev1alpha.EnvFromSource{ConfigMapRef: cm("app")}, computev1alpha.EnvFromSource{Prefix: "DB_", SecretRef: sec("db")}),
		},
		"an envFrom source naming nothing is refused": {
			change: envFrom(computev1alpha.EnvFromSource{Prefix: "X_"}),
			want:   []violation{{field.ErrorTypeRequired, c0 + ".envFrom[0]"}},
		},
		"an envFrom source naming both is refused": {
			change: envFrom(computev1alpha.EnvFromSource{ConfigMapRef: cm("app"), SecretRef: sec("db")}),
			want:   []violation{{field.ErrorTypeForbidden, c0 + ".envFrom[0]"}},
		},
		"an envFrom prefix that is not a C identifier is refused": {
			change: envFrom(computev1alpha.EnvFromSource{Prefix: "1-bad", ConfigMapRef: cm("app")}),
			want:   []violation{{field.ErrorTypeInvalid, c0 + ".envFrom[0].prefix"}},
		},
		"an envFrom ConfigMap without a name is refused": {
			change: envFrom(computev1alpha.EnvFromSource{ConfigMapRef: cm("")}),
			want:   []violation{{field.ErrorTypeRequired, c0 + ".envFrom[0].configMapRef.name"}},
		},
		"an envFrom Secret with an invalid name is refused": {
			change: envFrom(computev1alpha.EnvFromSource{SecretRef: sec("Not_A_Name")}),
			want:   []violation{{field.ErrorTypeInvalid, c0 + ".envFrom[0].secretRef.name"}},
		},
		"a securityContext within the grant is accepted": {
			change: security(computev1alpha.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &computev1alpha.Capabilities{Add: []computev1alpha.Capability{"NET_BIND_SERVICE"}, Drop: []computev1alpha.Capability{"ALL"}},
				SeccompProfile:           &computev1alpha.SeccompProfile{Type: computev1alpha.SeccompProfileTypeRuntimeDefault},
			}),
		},
		"adding ALL is refused": {
			change: security(caps([]computev1alpha.Capability{"ALL"}, nil)),
			want:   []violation{{field.ErrorTypeForbidden, c0 + ".securityContext.capabilities.add[0]"}},
		},
		"adding a capability the runtime does not grant is refused": {
			change: security(caps([]computev1alpha.Capability{"SYS_ADMIN"}, nil)),
			want:   []violation{{field.ErrorTypeNotSupported, c0 + ".securityContext.capabilities.add[0]"}},
		},
		"adding a capability twice is refused": {
			change: security(caps([]computev1alpha.Capability{"CHOWN", "CAP_CHOWN"}, nil)),
			want:   []violation{{field.ErrorTypeDuplicate, c0 + ".securityContext.capabilities.add[1]"}},
		},
		"dropping a malformed capability is refused": {
			change: security(caps(nil, []computev1alpha.Capability{"net raw"})),
			want:   []violation{{field.ErrorTypeInvalid, c0 + ".securityContext.capabilities.drop[0]"}},
		},
		"a seccomp profile from a file is refused": {
			change: security(computev1alpha.SecurityContext{SeccompProfile: &computev1alpha.SeccompProfile{Type: "Localhost"}}),
			want:   []violation{{field.ErrorTypeNotSupported, c0 + ".securityContext.seccompProfile.type"}},
		},
		"an unconfined seccomp profile is refused (a shared kernel)": {
			change: security(computev1alpha.SecurityContext{SeccompProfile: &computev1alpha.SeccompProfile{Type: computev1alpha.SeccompProfileTypeUnconfined}}),
			want:   []violation{{field.ErrorTypeForbidden, c0 + ".securityContext.seccompProfile.type"}},
		},
		"the runtime's default seccomp profile is accepted": {
			change: security(computev1alpha.SecurityContext{SeccompProfile: &computev1alpha.SeccompProfile{Type: computev1alpha.SeccompProfileTypeRuntimeDefault}}),
		},
		"a runtime class name is accepted": {
			change: func(w *computev1alpha.Workload) { w.Spec.Template.Spec.Runtime.Class = "general-purpose" },
		},
		"a runtime class that is not an object name is refused": {
			change: func(w *computev1alpha.Workload) { w.Spec.Template.Spec.Runtime.Class = "General Purpose" },
			want:   []violation{{field.ErrorTypeInvalid, "spec.template.spec.runtime.class"}},
		},
		"an interface without the new fields is accepted": {
			change: withInterfaces(nic),
		},
		"two named dual-stack interfaces with addresses are accepted": {
			change: withInterfaces(
				computev1alpha.InstanceNetworkInterface{Name: "eth0", IPFamilies: []computev1alpha.IPFamily{"IPv6", "IPv4"}, ReclaimPolicy: "Retain",
					Addresses: []computev1alpha.InstanceNetworkInterfaceAddressRequest{{Class: "public-ipv4"}}},
				computev1alpha.InstanceNetworkInterface{Name: "eth1", IPFamilies: []computev1alpha.IPFamily{"IPv4"}}),
		},
		"a second interface without a name is refused, since it would be eth0 too": {
			change: withInterfaces(nic, nic),
			want:   []violation{{field.ErrorTypeDuplicate, "spec.template.spec.networkInterfaces[1].name"}},
		},
		"two interfaces of one name are refused": {
			change: withInterfaces(computev1alpha.InstanceNetworkInterface{Name: "eth1"}, computev1alpha.InstanceNetworkInterface{Name: "eth1"}),
			want:   []violation{{field.ErrorTypeDuplicate, "spec.template.spec.networkInterfaces[1].name"}},
		},
		"an interface name longer than a device name is refused": {
			change: withInterfaces(computev1alpha.InstanceNetworkInterface{Name: "a-very-long-name0"}),
			want:   []violation{{field.ErrorTypeTooLong, "spec.template.spec.networkInterfaces[0].name"}},
		},
		"an unknown address family is refused": {
			change: withInterfaces(computev1alpha.InstanceNetworkInterface{IPFamilies: []computev1alpha.IPFamily{"IPv5"}}),
			want:   []violation{{field.ErrorTypeNotSupported, "spec.template.spec.networkInterfaces[0].ipFamilies[0]"}},
		},
		"an address family twice is refused": {
			change: withInterfaces(computev1alpha.InstanceNetworkInterface{IPFamilies: []computev1alpha.IPFamily{"IPv4", "IPv4"}}),
			want:   []violation{{field.ErrorTypeInvalid, "spec.template.spec.networkInterfaces[0].ipFamilies"}},
		},
		"an address class twice is refused": {
			change: withInterfaces(computev1alpha.InstanceNetworkInterface{Addresses: []computev1alpha.InstanceNetworkInterfaceAddressRequest{{Class: "public-ipv4"}, {Class: "public-ipv4"}}}),
			want:   []violation{{field.ErrorTypeInvalid, "spec.template.spec.networkInterfaces[0].addresses[1].class"}},
		},
		"an address request without a class is refused": {
			change: withInterfaces(computev1alpha.InstanceNetworkInterface{Addresses: []computev1alpha.InstanceNetworkInterfaceAddressRequest{{}}}),
			want:   []violation{{field.ErrorTypeRequired, "spec.template.spec.networkInterfaces[0].addresses[0].class"}},
		},
		"an unknown reclaim policy is refused": {
			change: withInterfaces(computev1alpha.InstanceNetworkInterface{ReclaimPolicy: "Recycle"}),
			want:   []violation{{field.ErrorTypeNotSupported, "spec.template.spec.networkInterfaces[0].reclaimPolicy"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := makeWorkload().with(tc.change).build()
			DefaultWorkload(w)
			got := violations(ValidateWorkloadCreate(w, env))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("ValidateWorkloadCreate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultWorkloadWritesTheInterfaceDefaults(t *testing.T) {
	w := makeWorkload().with(withInterfaces(computev1alpha.InstanceNetworkInterface{},
		computev1alpha.InstanceNetworkInterface{Name: "eth1", IPFamilies: []computev1alpha.IPFamily{"IPv4"}, ReclaimPolicy: "Retain"})).build()
	DefaultWorkload(w)
	want := []computev1alpha.InstanceNetworkInterface{
		{Network: computev1alpha.NetworkReference{Name: "net-a"}, Name: "eth0", IPFamilies: []computev1alpha.IPFamily{"IPv6"}, ReclaimPolicy: "Delete"},
		{Network: computev1alpha.NetworkReference{Name: "net-b"}, Name: "eth1", IPFamilies: []computev1alpha.IPFamily{"IPv4"}, ReclaimPolicy: "Retain"},
	}
	if diff := cmp.Diff(want, w.Spec.Template.Spec.NetworkInterfaces); diff != "" {
		t.Fatalf("DefaultWorkload() interfaces mismatch (-want +got):\n%s", diff)
	}
}
