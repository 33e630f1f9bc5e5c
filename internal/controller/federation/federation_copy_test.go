package federation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// wdBuilder builds WorkloadDeployments for the tests.
type wdBuilder struct {
	wd *computev1alpha.WorkloadDeployment
}

func makeWD(namespace, name, city string) *wdBuilder {
	wd := &computev1alpha.WorkloadDeployment{}
	wd.Namespace, wd.Name, wd.UID, wd.Generation = namespace, name, "wd-uid", 4
	wd.Labels = map[string]string{computev1alpha.WorkloadNameLabel: "web", computev1alpha.CityCodeLabel: city}
	wd.OwnerReferences = []metav1.OwnerReference{{APIVersion: "compute.datumapis.com/v1alpha", Kind: "Workload", Name: "web", UID: "w-uid"}}
	wd.Finalizers = []string{computev1alpha.FederationFinalizer}
	wd.Spec = computev1alpha.WorkloadDeploymentSpec{
		WorkloadRef:   computev1alpha.WorkloadReference{Name: "web", UID: "w-uid"},
		PlacementName: "edge",
		CityCode:      city,
		ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 2},
	}
	return &wdBuilder{wd: wd}
}

func (b *wdBuilder) withLabel(k, v string) *wdBuilder {
	metav1.SetMetaDataLabel(&b.wd.ObjectMeta, k, v)
	return b
}

func (b *wdBuilder) withReplicas(n int32) *wdBuilder {
	b.wd.Spec.Replicas = ptr.To(n)
	return b
}

func (b *wdBuilder) withGeneration(g int64) *wdBuilder {
	b.wd.Generation = g
	return b
}

func (b *wdBuilder) suspended() *wdBuilder {
	metav1.SetMetaDataAnnotation(&b.wd.ObjectMeta, computev1alpha.SuspendedAnnotation, computev1alpha.SuspendedAnnotationValue)
	return b
}

func (b *wdBuilder) build() *computev1alpha.WorkloadDeployment { return b.wd }

func TestHubCopy(t *testing.T) {
	got := HubCopy("org/proj", "ns-123", makeWD("default", "web-dfw-1", "DFW").build())
	want := &computev1alpha.WorkloadDeployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "compute.datumapis.com/v1alpha", Kind: "WorkloadDeployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "web-dfw-1",
			Namespace: "ns-123",
			Labels: map[string]string{
				computev1alpha.WorkloadNameLabel:        "web",
				computev1alpha.CityCodeLabel:            "DFW",
				computev1alpha.UpstreamClusterNameLabel: "cluster-org_proj",
				computev1alpha.UpstreamNamespaceLabel:   "default",
				computev1alpha.CityCodeTopologyLabel:    "DFW",
			},
			Annotations: map[string]string{UpstreamGenerationAnnotation: "4", UpstreamUIDAnnotation: "wd-uid"},
		},
		Spec: makeWD("default", "web-dfw-1", "DFW").build().Spec,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("HubCopy() mismatch (-want +got):\n%s", diff)
	}
}

func TestMergeHubCopy(t *testing.T) {
	karmadaLabel := "propagationpolicy.karmada.io/permanent-id"
	tests := map[string]struct {
		existing    *computev1alpha.WorkloadDeployment
		desired     *computev1alpha.WorkloadDeployment
		wantChanged bool
		check       func(t *testing.T, merged *computev1alpha.WorkloadDeployment)
	}{
		"an up-to-date copy is left alone, Karmada's labels included": {
			existing: HubCopy("p", "ns-1", makeWD("default", "web", "DFW").withLabel(karmadaLabel, "x").build()),
			desired:  HubCopy("p", "ns-1", makeWD("default", "web", "DFW").build()),
		},
		"a new replica count is copied and Karmada's labels are kept": {
			existing:    HubCopy("p", "ns-1", makeWD("default", "web", "DFW").withLabel(karmadaLabel, "x").build()),
			desired:     HubCopy("p", "ns-1", makeWD("default", "web", "DFW").withReplicas(5).withGeneration(5).build()),
			wantChanged: true,
			check: func(t *testing.T, merged *computev1alpha.WorkloadDeployment) {
				if merged.Labels[karmadaLabel] != "x" || ptr.Deref(merged.Spec.Replicas, 0) != 5 ||
					merged.Annotations[UpstreamGenerationAnnotation] != "5" {
					t.Errorf("merged = labels %v, replicas %v, annotations %v", merged.Labels, merged.Spec.Replicas, merged.Annotations)
				}
			},
		},
		"a removed replica override is removed from the copy": {
			existing:    HubCopy("p", "ns-1", makeWD("default", "web", "DFW").withReplicas(5).build()),
			desired:     HubCopy("p", "ns-1", makeWD("default", "web", "DFW").build()),
			wantChanged: true,
			check: func(t *testing.T, merged *computev1alpha.WorkloadDeployment) {
				if merged.Spec.Replicas != nil {
					t.Errorf("replicas = %v, want none", *merged.Spec.Replicas)
				}
			},
		},
		"a suspension reaches the copy": {
			existing:    HubCopy("p", "ns-1", makeWD("default", "web", "DFW").build()),
			desired:     HubCopy("p", "ns-1", makeWD("default", "web", "DFW").suspended().build()),
			wantChanged: true,
			check: func(t *testing.T, merged *computev1alpha.WorkloadDeployment) {
				if !computev1alpha.IsSuspended(merged.Annotations) {
					t.Errorf("annotations = %v, want the suspension", merged.Annotations)
				}
			},
		},
		"a lifted suspension leaves the copy": {
			existing:    HubCopy("p", "ns-1", makeWD("default", "web", "DFW").suspended().build()),
			desired:     HubCopy("p", "ns-1", makeWD("default", "web", "DFW").build()),
			wantChanged: true,
			check: func(t *testing.T, merged *computev1alpha.WorkloadDeployment) {
				if _, ok := merged.Annotations[computev1alpha.SuspendedAnnotation]; ok {
					t.Errorf("annotations = %v, want no suspension", merged.Annotations)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			merged, changed := MergeHubCopy(tc.existing, tc.desired)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if tc.check != nil {
				tc.check(t, merged)
			}
		})
	}
}

func TestRequestForHubDeployment(t *testing.T) {
	tests := map[string]struct {
		labels map[string]string
		want   mcreconcile.Request
		wantOK bool
	}{
		"a copy maps to its project request with the cluster name restored": {
			labels: map[string]string{
				computev1alpha.UpstreamClusterNameLabel: "cluster-org_proj",
				computev1alpha.UpstreamNamespaceLabel:   "default",
			},
			want: mcreconcile.Request{
				Request:     reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "web-dfw-1"}},
				ClusterName: "org/proj",
			},
			wantOK: true,
		},
		"an object without upstream labels is not a copy": {
			labels: map[string]string{computev1alpha.CityCodeTopologyLabel: "DFW"},
		},
		"a cluster label without the prefix is dropped, never routed to the host cluster": {
			labels: map[string]string{
				computev1alpha.UpstreamClusterNameLabel: "org_proj",
				computev1alpha.UpstreamNamespaceLabel:   "default",
			},
		},
		"an empty cluster name is dropped": {
			labels: map[string]string{
				computev1alpha.UpstreamClusterNameLabel: "cluster-",
				computev1alpha.UpstreamNamespaceLabel:   "default",
			},
		},
		"a copy without its namespace label is dropped": {
			labels: map[string]string{computev1alpha.UpstreamClusterNameLabel: "cluster-single"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := &computev1alpha.WorkloadDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-1", Name: "web-dfw-1", Labels: tc.labels}}
			got, ok := RequestForHubDeployment(obj)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("request mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCityRequestFor(t *testing.T) {
	copyOf := HubCopy("single", "ns-1", makeWD("default", "web", "LHR").build())
	tests := map[string]struct {
		obj    client.Object
		want   reconcile.Request
		wantOK bool
	}{
		"a compute copy maps to its city": {obj: copyOf, want: CityRequest("ns-1", "LHR"), wantOK: true},
		"compute's policy maps to its city": {
			obj: CityPolicy("ns-1", "SIN"), want: CityRequest("ns-1", "SIN"), wantOK: true,
		},
		"a WorkloadDeployment compute did not copy is ignored": {
			obj: &computev1alpha.WorkloadDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "e2e", Name: "web",
				Labels: map[string]string{computev1alpha.CityCodeTopologyLabel: "LHR"}}},
		},
		"an object without a city is ignored": {
			obj: &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-1", Name: "other"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := cityRequestFor(tc.obj)
			if ok != tc.wantOK || got != tc.want {
				t.Errorf("cityRequestFor() = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestCityPolicy(t *testing.T) {
	p := CityPolicy("ns-1", "DFW")
	if p.Name != "city-dfw" || p.Namespace != "ns-1" {
		t.Errorf("policy is %s/%s, want ns-1/city-dfw", p.Namespace, p.Name)
	}
	sel := map[string]string{computev1alpha.CityCodeTopologyLabel: "DFW"}
	rs := p.Spec.ResourceSelectors
	if len(rs) != 1 || rs[0].APIVersion != "compute.datumapis.com/v1alpha" || rs[0].Kind != "WorkloadDeployment" ||
		!cmp.Equal(rs[0].LabelSelector.MatchLabels, sel) {
		t.Errorf("the policy selects %+v, want WorkloadDeployments labelled %v", rs, sel)
	}
	if !cmp.Equal(p.Spec.Placement.ClusterAffinity.LabelSelector.MatchLabels, sel) {
		t.Errorf("the policy targets %v, want Clusters labelled %v", p.Spec.Placement.ClusterAffinity.LabelSelector, sel)
	}
	if p.Spec.Placement.ReplicaScheduling.ReplicaSchedulingType != policyv1alpha1.ReplicaSchedulingTypeDuplicated {
		t.Errorf("replica scheduling %v, want Duplicated", p.Spec.Placement.ReplicaScheduling)
	}
	if policyDrifted(p, CityPolicy("ns-1", "DFW")) {
		t.Error("a policy drifted from itself")
	}
	defaulted := p.DeepCopy()
	defaulted.Spec.ConflictResolution = policyv1alpha1.ConflictAbort
	defaulted.Spec.Placement.ClusterTolerations = []corev1.Toleration{{Key: "k"}}
	if policyDrifted(defaulted, p) {
		t.Error("fields compute does not decide count as drift")
	}
	retargeted := p.DeepCopy()
	retargeted.Spec.Placement.ClusterAffinity.LabelSelector.MatchLabels[computev1alpha.CityCodeTopologyLabel] = "LHR"
	if !policyDrifted(retargeted, p) {
		t.Error("a policy targeting another city did not drift")
	}
}

func TestBelongsTo(t *testing.T) {
	ns := HubNamespace("single", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "u-1"}})
	if ns.Name != "ns-u-1" {
		t.Errorf("hub namespace %s, want ns-u-1", ns.Name)
	}
	if !BelongsTo(ns, "single", "default") {
		t.Error("the hub namespace does not belong to its project namespace")
	}
	if BelongsTo(ns, "other", "default") || BelongsTo(ns, "single", "prod") {
		t.Error("the hub namespace belongs to another project namespace")
	}
}

func TestHubCopyCarriesWhenTheTemplateWasApplied(t *testing.T) {
	wd := makeWD("default", "web-dfw-1", "DFW").build()
	wd.Annotations = map[string]string{computev1alpha.RevisionAppliedAtAnnotation: "2026-11-27T08:00:00Z", "other": "kept out"}
	got := HubCopy("org/proj", "ns-123", wd).Annotations
	if got[computev1alpha.RevisionAppliedAtAnnotation] != "2026-11-27T08:00:00Z" {
		t.Errorf("the hub copy's %s = %q, want the project's", computev1alpha.RevisionAppliedAtAnnotation, got[computev1alpha.RevisionAppliedAtAnnotation])
	}
	if _, ok := got["other"]; ok {
		t.Errorf("the hub copy carries an annotation it does not need: %v", got)
	}
}

func TestClaimedBy(t *testing.T) {
	policy := CityPolicy("ns-1", "DFW")
	hubCopy := &computev1alpha.WorkloadDeployment{}
	ClaimedBy(hubCopy, policy)
	if len(hubCopy.Labels)+len(hubCopy.Annotations) != 0 {
		t.Fatalf("a policy without a permanent id claimed the copy: labels %v, annotations %v", hubCopy.Labels, hubCopy.Annotations)
	}
	policy.Labels[policyv1alpha1.PropagationPolicyPermanentIDLabel] = "id-1"
	ClaimedBy(hubCopy, policy)
	if got := hubCopy.Labels[policyv1alpha1.PropagationPolicyPermanentIDLabel]; got != "id-1" {
		t.Errorf("permanent-id label = %q, want id-1", got)
	}
	if ns, name := hubCopy.Annotations[policyv1alpha1.PropagationPolicyNamespaceAnnotation], hubCopy.Annotations[policyv1alpha1.PropagationPolicyNameAnnotation]; ns != "ns-1" || name != CityPolicyName("DFW") {
		t.Errorf("policy annotations = %q/%q, want ns-1/%s", ns, name, CityPolicyName("DFW"))
	}
}
