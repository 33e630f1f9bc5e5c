//go:build linux

package platform

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestApplyKeepsWhatOtherWritersSet: an object written over keeps the
// labels, annotations and finalizers others set (Karmada's permanent-id
// label on a policy cannot be dropped), and ours win where both set one.
func TestApplyKeepsWhatOtherWritersSet(t *testing.T) {
	got := &unstructured.Unstructured{}
	got.SetLabels(map[string]string{"clusterpropagationpolicy.karmada.io/permanent-id": "abc", "app": "old"})
	got.SetAnnotations(map[string]string{"theirs": "1"})
	got.SetFinalizers([]string{"karmada.io/cluster-propagation-policy-controller"})
	want := &unstructured.Unstructured{}
	want.SetLabels(map[string]string{"app": "new"})
	keepTheirs(want, got)
	if diff := cmp.Diff(map[string]string{"clusterpropagationpolicy.karmada.io/permanent-id": "abc", "app": "new"}, want.GetLabels()); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"theirs": "1"}, want.GetAnnotations()); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(got.GetFinalizers(), want.GetFinalizers()); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}
}
