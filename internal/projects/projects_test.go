package projects

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/providers/kubeconfig"
	"sigs.k8s.io/multicluster-runtime/providers/single"
)

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		change  func(*Options)
		wantErr []string
	}{
		"the defaults are valid": {change: func(*Options) {}},
		"kubeconfig mode with its defaults is valid": {
			change: func(o *Options) { o.Mode = ModeKubeconfig },
		},
		"an unknown mode names the flag": {
			change:  func(o *Options) { o.Mode = "milo" },
			wantErr: []string{"--project-discovery"},
		},
		"single mode refuses the empty cluster name, which is the host": {
			change:  func(o *Options) { o.SingleClusterName = "" },
			wantErr: []string{"--single-project-cluster-name"},
		},
		"kubeconfig mode needs a namespace and a valid label": {
			change:  func(o *Options) { o.Mode, o.SecretNamespace, o.SecretLabel = ModeKubeconfig, "", "not a label" },
			wantErr: []string{"--project-kubeconfig-namespace", "--project-kubeconfig-label"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			tc.change(&o)
			err := o.Validate()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			for _, want := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("Validate() = %v, want an error naming %s", err, want)
				}
			}
		})
	}
}

func TestNewProviderFollowsTheMode(t *testing.T) {
	o := NewOptions()
	p, err := NewProvider(o, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*single.Provider); !ok {
		t.Fatalf("single mode built a %T", p)
	}
	o.Mode = ModeKubeconfig
	if p, err = NewProvider(o, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*kubeconfig.Provider); !ok {
		t.Fatalf("kubeconfig mode built a %T", p)
	}
}

// readerCluster is a cluster that only has an API reader.
type readerCluster struct {
	cluster.Cluster
	reader client.Reader
}

func (c readerCluster) GetAPIReader() client.Reader { return c.reader }

// clusters resolves names to clusters.
type clusters map[string]cluster.Cluster

func (c clusters) GetCluster(_ context.Context, name string) (cluster.Cluster, error) {
	if cl, ok := c[name]; ok {
		return cl, nil
	}
	return nil, errors.New("cluster not found")
}

func TestResolvers(t *testing.T) {
	labelled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{DefaultProjectLabel: "acme-shop"}}}
	bare := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}
	cl := readerCluster{reader: fake.NewClientBuilder().WithObjects(labelled, bare).Build()}
	single := NewResolver(NewOptions(), clusters{"single": cl})
	kc := NewOptions()
	kc.Mode = ModeKubeconfig
	multi := NewResolver(kc, clusters{})

	tests := map[string]struct {
		resolver           Resolver
		cluster, namespace string
		want               Project
		wantUnresolvable   bool
		wantOtherError     bool
	}{
		"single mode reads the namespace label": {
			resolver: single, cluster: "single", namespace: "shop", want: Project{Name: "acme-shop", Cluster: "single"},
		},
		"single mode without the label is unresolvable": {
			resolver: single, cluster: "single", namespace: "bare", wantUnresolvable: true,
		},
		"single mode with an unknown cluster fails": {
			resolver: single, cluster: "other", namespace: "shop", wantOtherError: true,
		},
		"kubeconfig mode: the cluster is the project": {
			resolver: multi, cluster: "project-a", namespace: "anything", want: Project{Name: "project-a", Cluster: "project-a"},
		},
		"the empty cluster name never resolves": {
			resolver: multi, cluster: "", namespace: "shop", wantUnresolvable: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.resolver.ProjectOf(context.Background(), tc.cluster, tc.namespace)
			switch {
			case tc.wantUnresolvable:
				if !errors.Is(err, ErrProjectUnresolvable) {
					t.Fatalf("ProjectOf() error = %v, want ErrProjectUnresolvable", err)
				}
			case tc.wantOtherError:
				if err == nil || errors.Is(err, ErrProjectUnresolvable) {
					t.Fatalf("ProjectOf() error = %v, want a lookup error", err)
				}
			case err != nil:
				t.Fatalf("ProjectOf() error = %v", err)
			case got != tc.want:
				t.Fatalf("ProjectOf() = %+v, want %+v", got, tc.want)
			}
		})
	}
}
