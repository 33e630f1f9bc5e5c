package management

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/webhook/validation"
)

// padPlaceholder stands in the template for the bytes an attacker varies.
const padPlaceholder = "PADPADPADPADPADP"

// TestNoHashDecidesWhoMayDeliverASecret is the attack of an editor who may
// not read Secret db on a Workload that reads it: swap its image for one
// whose template has the same 32-bit hash admission used to decide whether
// to check the references (found in well under a second), or restart it
// without touching the template. Both ran with no check before; now the
// check runs on every create and update that references anything, and the
// author who may read the Secret still may.
func TestNoHashDecidesWhoMayDeliverASecret(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	admin := env.Client(projectA)
	g.Expect(admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(gomega.Succeed())
	grantRole(t, ns, "workload-editor", "mallory",
		rbacv1.PolicyRule{APIGroups: []string{"compute.datumapis.com"}, Resources: []string{"workloads"}, Verbs: []string{"get", "update", "patch"}})
	mallory := clientAs(t, "mallory")

	base := makeWorkload("reads-db", ns).withPlacement("edge", 1, "DFW").with(func(w *computev1alpha.Workload) {
		sandbox(w).Env = []computev1alpha.EnvVar{
			{Name: "PAD", Value: padPlaceholder},
			{Name: "PW", ValueFrom: &computev1alpha.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "pw"}}},
		}
	}).build()
	good, evil := collidingImages(t, base, "ghcr.io/example/app:1.0", "ghcr.io/evil/exfiltrate:1")

	t.Log("the author, who may read db, deploys it")
	g.Expect(admin.Create(ctx, good)).To(gomega.Succeed())

	t.Log("mallory swaps the image for a template with the same old hash: refused, naming the Secret")
	err := tryUpdateAs(mallory, good, func(w *computev1alpha.Workload) { w.Spec.Template = evil.Spec.Template })
	g.Expect(isWebhookDenial(err)).To(gomega.BeTrue(), "a colliding template skipped the reference check: %v", err)
	g.Expect(err.Error()).To(gomega.ContainSubstring("SourceUnauthorized: mallory may not get Secret db"))

	t.Log("mallory restarts it (the template unchanged): refused too, the cells would run it again")
	err = tryUpdateAs(mallory, good, func(w *computev1alpha.Workload) {
		w.Annotations = map[string]string{computev1alpha.CityRestartedAtAnnotationPrefix + "DFW": "2026-11-29T00:00:00Z"}
	})
	g.Expect(isWebhookDenial(err)).To(gomega.BeTrue(), "a restart skipped the reference check: %v", err)
	g.Expect(err.Error()).To(gomega.ContainSubstring("SourceUnauthorized: mallory may not get Secret db"))

	t.Log("the author may restart it and change it")
	g.Expect(tryUpdateAs(admin, good, func(w *computev1alpha.Workload) {
		w.Annotations = map[string]string{computev1alpha.CityRestartedAtAnnotationPrefix + "DFW": "2026-11-29T00:00:00Z"}
	})).To(gomega.Succeed())
	g.Expect(tryUpdateAs(admin, good, func(w *computev1alpha.Workload) { sandbox(w).Image = "ghcr.io/example/app:2.0" })).To(gomega.Succeed())
}

// TestTheTemplateHistoryCannotBeForged: template-changed-by names who last
// changed the template; an update that leaves the template alone keeps it,
// whatever it writes there.
func TestTheTemplateHistoryCannotBeForged(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	w := create(t, projectA, makeWorkload("history", ns).withPlacement("edge", 1, "DFW").build())
	g.Expect(w.Annotations).To(gomega.HaveKeyWithValue(computev1alpha.TemplateChangedByAnnotation, developer))
	update(t, projectA, w, func(w *computev1alpha.Workload) {
		w.Labels = map[string]string{"team": "shop"}
		w.Annotations[computev1alpha.TemplateChangedByAnnotation] = "someone-else"
	})
	g.Expect(getWorkload(g, projectA, w).Annotations).To(gomega.HaveKeyWithValue(computev1alpha.TemplateChangedByAnnotation, developer))
	update(t, projectA, w, func(w *computev1alpha.Workload) { delete(w.Annotations, computev1alpha.TemplateChangedByAnnotation) })
	g.Expect(getWorkload(g, projectA, w).Annotations).To(gomega.HaveKeyWithValue(computev1alpha.TemplateChangedByAnnotation, developer))
}

// collidingImages returns two copies of w, with images a and b and PAD
// values chosen so that their templates, as admission sees them (defaulted,
// canonical), have the same FNV-1a 32 hash: the hash compute used to decide
// whether a template changed. A birthday search over 2^17 pads of one side.
func collidingImages(t *testing.T, w *computev1alpha.Workload, a, b string) (*computev1alpha.Workload, *computev1alpha.Workload) {
	t.Helper()
	encode := func(image string) []byte {
		c := w.DeepCopy()
		validation.DefaultWorkload(c)
		sandbox(c).Image = image
		raw, err := json.Marshal(names.CanonicalTemplate(&c.Spec.Template))
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	oldHash := func(raw []byte, pad string) uint32 {
		h := fnv.New32a()
		_, _ = h.Write(bytes.Replace(raw, []byte(padPlaceholder), []byte(pad), 1))
		return h.Sum32()
	}
	rawA, rawB := encode(a), encode(b)
	seen := make(map[uint32]string, 1<<17)
	for i := range 1 << 17 {
		pad := fmt.Sprintf("a%015x", i)
		seen[oldHash(rawA, pad)] = pad
	}
	with := func(image, pad string) *computev1alpha.Workload {
		c := w.DeepCopy()
		sandbox(c).Image = image
		sandbox(c).Env[0].Value = pad
		return c
	}
	for i := range 1 << 22 {
		pad := fmt.Sprintf("b%015x", i)
		if padA, ok := seen[oldHash(rawB, pad)]; ok {
			return with(a, padA), with(b, pad)
		}
	}
	t.Fatal("no collision found")
	return nil, nil
}

// tryUpdateAs changes a Workload with f as the client c, retrying only on
// conflicts, and returns the final error.
func tryUpdateAs(c client.Client, w *computev1alpha.Workload, f func(*computev1alpha.Workload)) error {
	for {
		cur := &computev1alpha.Workload{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), cur); err != nil {
			return err
		}
		f(cur)
		err := c.Update(context.Background(), cur)
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}
