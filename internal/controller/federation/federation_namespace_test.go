package federation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// TestVerifiedHubNamespace checks when a recorded federation namespace is
// trusted without reading the project namespace: only when a hub copy in it
// belongs to the deployment's project namespace and carries the
// deployment's UID.
func TestVerifiedHubNamespace(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := computev1alpha.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	project := func(uid types.UID, record string) *computev1alpha.WorkloadDeployment {
		wd := &computev1alpha.WorkloadDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-dfw", UID: uid}}
		wd.Spec.CityCode = "DFW"
		if record != "" {
			wd.Annotations = map[string]string{computev1alpha.FederationNamespaceAnnotation: record}
		}
		return wd
	}
	copyOf := func(wd *computev1alpha.WorkloadDeployment, cluster, hubNamespace string) *computev1alpha.WorkloadDeployment {
		return HubCopy(cluster, hubNamespace, wd)
	}
	cases := []struct {
		name   string
		wd     *computev1alpha.WorkloadDeployment
		hub    []*computev1alpha.WorkloadDeployment
		want   string
		wantOK bool
	}{
		{name: "nothing recorded yet", wd: project("u-1", ""),
			hub: []*computev1alpha.WorkloadDeployment{copyOf(project("u-1", ""), "single", "ns-a")}},
		{name: "recorded, no copy there", wd: project("u-1", "ns-a")},
		{name: "recorded and proven by the copy", wd: project("u-1", "ns-a"),
			hub: []*computev1alpha.WorkloadDeployment{copyOf(project("u-1", ""), "single", "ns-a")}, want: "ns-a", wantOK: true},
		{name: "the copy is of an earlier deployment of the same name (namespace made again)", wd: project("u-2", "ns-a"),
			hub: []*computev1alpha.WorkloadDeployment{copyOf(project("u-1", ""), "single", "ns-a")}},
		{name: "the copy belongs to another project cluster", wd: project("u-1", "ns-a"),
			hub: []*computev1alpha.WorkloadDeployment{copyOf(project("u-1", ""), "other", "ns-a")}},
		{name: "a copy written before copies carried the UID", wd: project("u-1", "ns-a"),
			hub: []*computev1alpha.WorkloadDeployment{func() *computev1alpha.WorkloadDeployment {
				c := copyOf(project("u-1", ""), "single", "ns-a")
				delete(c.Annotations, UpstreamUIDAnnotation)
				return c
			}()}},
		{name: "a deployment without a UID", wd: project("", "ns-a"),
			hub: []*computev1alpha.WorkloadDeployment{copyOf(project("", ""), "single", "ns-a")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme)
			for _, h := range tc.hub {
				b = b.WithObjects(h)
			}
			r := &Reconciler{Hub: b.Build()}
			got, ok := r.verifiedHubNamespace(t.Context(), &scope{cluster: "single", wd: tc.wd})
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("verifiedHubNamespace() = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
