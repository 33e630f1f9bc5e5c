//go:build linux

package platform

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestMetricsServerServesOnLoopbackAndVerifiesTheKubelets(t *testing.T) {
	args := metricsServerArgs(metricsServerFiles{
		kubeconfig: "/s/nodes/dfw/metrics-server/kubeconfig", certFile: "/s/ms/tls.crt", keyFile: "/s/ms/tls.key", caFile: "/s/pki/ca.crt",
	}, 4443)
	for _, want := range []string{
		"--bind-address=127.0.0.1", "--secure-port=4443",
		"--kubeconfig=/s/nodes/dfw/metrics-server/kubeconfig",
		"--authentication-kubeconfig=/s/nodes/dfw/metrics-server/kubeconfig",
		"--authorization-kubeconfig=/s/nodes/dfw/metrics-server/kubeconfig",
		"--tls-cert-file=/s/ms/tls.crt", "--tls-private-key-file=/s/ms/tls.key",
		"--kubelet-certificate-authority=/s/pki/ca.crt",
		"--kubelet-preferred-address-types=InternalIP", "--kubelet-use-node-status-port=true",
		"--metric-resolution=15s",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("metrics-server lacks %s: %v", want, args)
		}
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--kubelet-insecure-tls") || strings.Contains(a, "0.0.0.0") {
			t.Errorf("metrics-server must verify the kubelets and serve on loopback only: %s", a)
		}
	}
}

func TestMetricsServerIsRegisteredAsTheMetricsAPIWithItsRBAC(t *testing.T) {
	objs, err := metricsServerObjects(4443, "Q0E=")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, o := range objs {
		got[o.GetKind()+" "+describeKey(o)] = true
		switch o.GetKind() {
		case "APIService":
			if o.GetName() != metricsAPIService {
				t.Errorf("APIService %s, want %s", o.GetName(), metricsAPIService)
			}
			port, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "service", "port")
			if ca, _, _ := unstructured.NestedString(o.Object, "spec", "caBundle"); fmt.Sprint(port) != "4443" || ca != "Q0E=" {
				t.Errorf("APIService service port %v and caBundle %v, want 4443 and Q0E=", port, ca)
			}
		case "ClusterRoleBinding", "RoleBinding":
			subject := o.Object["subjects"].([]any)[0].(map[string]any)
			if subject["kind"] != "User" || subject["name"] != metricsServerUser {
				t.Errorf("%s %s binds %v, want the user %s", o.GetKind(), o.GetName(), subject, metricsServerUser)
			}
		}
	}
	want := map[string]bool{
		"ClusterRole system:aggregated-metrics-reader":            true,
		"ClusterRole system:metrics-server":                       true,
		"ClusterRoleBinding system:metrics-server":                true,
		"ClusterRoleBinding metrics-server:system:auth-delegator": true,
		"RoleBinding kube-system/metrics-server-auth-reader":      true,
		"Service kube-system/metrics-server":                      true,
		"APIService v1beta1.metrics.k8s.io":                       true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics-server objects (-want +got):\n%s", diff)
	}
}

func TestEveryCellRunsTheAutoscalerAndOnlyCellsWithANodeRunNodeControllers(t *testing.T) {
	for name, tc := range map[string]struct {
		node bool
		want []string
	}{
		"a cell with a real node": {node: true, want: []string{
			"garbagecollector", "namespace", "horizontalpodautoscaling", "nodelifecycle", "deployment", "replicaset",
		}},
		"a cell without one": {node: false, want: []string{"garbagecollector", "namespace", "horizontalpodautoscaling"}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, cellControllers(tc.node)); diff != "" {
				t.Errorf("controllers (-want +got):\n%s", diff)
			}
		})
	}
	if hpaControllerArgs["horizontal-pod-autoscaler-sync-period"] != "5s" ||
		hpaControllerArgs["horizontal-pod-autoscaler-downscale-stabilization"] != "30s" {
		t.Errorf("the autoscaler's timing for a laptop: %v", hpaControllerArgs)
	}
}
