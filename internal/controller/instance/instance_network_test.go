package instance

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestARefusedNetworkExplainsAGatedInstanceOnly(t *testing.T) {
	refused := networkState{refused: "the networking service refused NetworkBinding web-0-net0 for network default in DFW (interface 0): SubnetExhausted: full"}
	notReady := func(reason string) metav1.Condition {
		return metav1.Condition{Type: computev1alpha.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: "m"}
	}
	for name, tc := range map[string]struct {
		ready metav1.Condition
		net   networkState
		want  string
	}{
		"waiting on the network":           {notReady(computev1alpha.ReasonPendingNetwork), refused, computev1alpha.ReasonNetworkUnavailable},
		"waiting on quota too":             {notReady(computev1alpha.ReasonPendingQuota), refused, computev1alpha.ReasonNetworkUnavailable},
		"a quota denial stays first":       {notReady(computev1alpha.ReasonQuotaExceeded), refused, computev1alpha.ReasonQuotaExceeded},
		"a running instance keeps its own": {notReady(computev1alpha.ReasonImageUnavailable), refused, computev1alpha.ReasonImageUnavailable},
		"nothing refused":                  {notReady(computev1alpha.ReasonPendingNetwork), networkState{}, computev1alpha.ReasonPendingNetwork},
		"ready stays ready": {metav1.Condition{Type: computev1alpha.ConditionReady, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonAvailable},
			refused, computev1alpha.ReasonAvailable},
	} {
		t.Run(name, func(t *testing.T) {
			got := withNetwork(tc.ready, tc.net)
			if got.Reason != tc.want {
				t.Fatalf("reason = %s, want %s", got.Reason, tc.want)
			}
			if tc.want == computev1alpha.ReasonNetworkUnavailable && got.Message != refused.refused {
				t.Fatalf("message = %q, want the refusal", got.Message)
			}
		})
	}
}

func TestEveryInterfaceGetsABindingInTheInstancesCityOwnedByIt(t *testing.T) {
	inst := &computev1alpha.Instance{}
	inst.Name, inst.Namespace, inst.UID = "web-0", "ns", "uid-1"
	inst.Labels = map[string]string{computev1alpha.CityCodeLabel: "DFW"}
	inst.Spec.NetworkInterfaces = []computev1alpha.InstanceNetworkInterface{
		{Network: computev1alpha.NetworkReference{Name: "blue"}},
		{Network: computev1alpha.NetworkReference{Name: "red", Namespace: "shared"}},
	}
	bs := wantedBindings(inst)
	if len(bs) != 2 || bs[0].Name != "web-0-net0" || bs[1].Name != "web-0-net1" {
		t.Fatalf("bindings = %+v", bs)
	}
	if bs[1].Spec.Network.Name != "red" || bs[1].Spec.Network.Namespace != "shared" || bs[0].Spec.Topology["topology.datum.net/city-code"] != "DFW" {
		t.Fatalf("binding specs = %+v, %+v", bs[0].Spec, bs[1].Spec)
	}
	if !metav1.IsControlledBy(bs[0], inst) {
		t.Fatal("the binding is not controlled by its Instance")
	}
	inst.Spec.NetworkInterfaces = nil
	if bs := wantedBindings(inst); len(bs) != 1 || bs[0].Spec.Network.Name != DefaultNetwork {
		t.Fatalf("an Instance without interfaces binds %+v, want the default network", bs)
	}
}
