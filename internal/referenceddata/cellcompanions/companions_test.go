package cellcompanions

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func labelled(hash string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace:   "ns",
		Labels:      map[string]string{computev1alpha.ReferencedDataLabel: computev1alpha.ReferencedDataLabelValue},
		Annotations: map[string]string{computev1alpha.ReferencedDataHashAnnotation: hash},
	}
}

func named(om metav1.ObjectMeta, ns, name string) metav1.ObjectMeta {
	om.Namespace, om.Name = ns, name
	return om
}

func TestPresentIsTheLabelledCompanionsOfTheNamespaceByName(t *testing.T) {
	s := apiruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&corev1.ConfigMap{ObjectMeta: named(labelled("h1"), "ns", "configmap.app")},
		&corev1.Secret{ObjectMeta: named(labelled("h2"), "ns", "secret.db")},
		// Not companions: unlabelled, another namespace, the wrong kind's name.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "secret.tls"}},
		&corev1.Secret{ObjectMeta: named(labelled("h3"), "other", "secret.tls")},
		&corev1.ConfigMap{ObjectMeta: named(labelled("h4"), "ns", "secret.cert")},
	).Build()
	got, err := Present(t.Context(), c, "ns")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"configmap.app": "h1", "secret.db": "h2"}, got); diff != "" {
		t.Errorf("Present (-want +got):\n%s", diff)
	}
}

func TestDeploymentOfIsTheControllerElseTheLabel(t *testing.T) {
	inst := &computev1alpha.Instance{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{computev1alpha.WorkloadDeploymentNameLabel: "by-label"}}}
	if got := DeploymentOf(inst); got != "by-label" {
		t.Errorf("without a controller: %q", got)
	}
	inst.OwnerReferences = []metav1.OwnerReference{{Kind: computev1alpha.WorkloadDeploymentKind, Name: "web", Controller: ptr.To(true)}}
	if got := DeploymentOf(inst); got != "web" {
		t.Errorf("with a controller: %q", got)
	}
}
