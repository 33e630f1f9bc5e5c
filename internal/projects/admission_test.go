package projects

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

func kubeconfigFor(t *testing.T, server string) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["p"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["p"] = &clientcmdapi.Context{Cluster: "p", AuthInfo: "u"}
	cfg.CurrentContext = "p"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func kubeconfigSecret(name string, labelled bool, data []byte) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: DefaultSecretNamespace, Labels: map[string]string{}},
		Data:       map[string][]byte{"kubeconfig": data},
	}
	if labelled {
		s.Labels["sigs.k8s.io/multicluster-runtime-kubeconfig"] = "true"
	}
	return s
}

func TestAdmissionClusters(t *testing.T) {
	engaged := readerCluster{}
	reader := fake.NewClientBuilder().WithObjects(
		kubeconfigSecret("standby", true, kubeconfigFor(t, "https://standby.example:6443")),
		kubeconfigSecret("unlabelled", false, kubeconfigFor(t, "https://x.example:6443")),
	).Build()
	o := NewOptions()
	o.Mode = ModeKubeconfig
	a := NewAdmissionClusters(o, clusters{"engaged": engaged}, reader, nil)
	ctx := context.Background()

	tests := map[string]struct {
		name      string
		wantHost  string
		wantErr   string
		wantExact cluster.Cluster
	}{
		"an engaged cluster is used as is":                  {name: "engaged", wantExact: engaged},
		"a registered cluster not engaged here is built":    {name: "standby", wantHost: "https://standby.example:6443"},
		"a Secret without the label registers nothing":      {name: "unlabelled", wantErr: "is not registered"},
		"an unknown cluster is not found":                   {name: "nope", wantErr: "failed to read the kubeconfig Secret"},
		"the empty name, the host cluster, is never served": {name: "", wantErr: "empty name"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cl, err := a.GetCluster(ctx, tc.name)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("GetCluster(%q) error = %v, want %q", tc.name, err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("GetCluster(%q) error = %v", tc.name, err)
			case tc.wantExact != nil && cl != tc.wantExact:
				t.Fatalf("GetCluster(%q) did not return the engaged cluster", tc.name)
			case tc.wantHost != "" && cl.GetConfig().Host != tc.wantHost:
				t.Fatalf("GetCluster(%q) host = %q, want %q", tc.name, cl.GetConfig().Host, tc.wantHost)
			}
		})
	}

	first, err := a.GetCluster(ctx, "standby")
	if err != nil {
		t.Fatal(err)
	}
	again, err := a.GetCluster(ctx, "standby")
	if err != nil || again != first {
		t.Fatalf("an unchanged Secret built a new cluster")
	}
}
