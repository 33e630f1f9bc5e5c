package management

import (
	"fmt"
	"testing"

	"github.com/onsi/gomega"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/revision"
)

func TestRevisionsAreRecordedForEveryTemplateChangeAndTrimmed(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectB)
	bindCity(t, projectB, ns, "LHR", true)
	w := create(t, projectB, makeWorkload("blog", ns).withPlacement("edge", 1, "LHR").withHistoryLimit(2).build())

	g.Eventually(func(g gomega.Gomega) {
		revs := revisionsOf(g, projectB, w)
		g.Expect(revs).To(gomega.HaveLen(1))
		r := revs[1]
		g.Expect(r.Annotations).To(gomega.HaveKeyWithValue(revision.ChangedByAnnotation, developer))
		tpl, err := revision.Template(&r)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(tpl.Spec.Runtime.Sandbox.Containers[0].Image).To(gomega.Equal("ghcr.io/example/app:1.0"))
		cur := getWorkload(g, projectB, w)
		g.Expect(cur.Status.CurrentRevision).To(gomega.Equal(int64(1)))
		g.Expect(cur.Status.CurrentTemplateHash).To(gomega.Equal(names.TemplateHash(&cur.Spec.Template)))
	}, timeout, interval).Should(gomega.Succeed())

	// Four more images: revisions 2..5; the limit keeps 2 besides the current.
	for i := 2; i <= 5; i++ {
		image := fmt.Sprintf("ghcr.io/example/app:%d.0", i)
		update(t, projectB, w, func(w *computev1alpha.Workload) {
			w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = image
		})
		g.Eventually(func(g gomega.Gomega) {
			g.Expect(getWorkload(g, projectB, w).Status.CurrentRevision).To(gomega.Equal(int64(i)))
		}, timeout, interval).Should(gomega.Succeed())
	}
	g.Eventually(func(g gomega.Gomega) {
		revs := revisionsOf(g, projectB, w)
		g.Expect(revs).To(gomega.HaveLen(3))
		g.Expect(revs).To(gomega.HaveKey(int64(3)))
		g.Expect(revs).To(gomega.HaveKey(int64(4)))
		g.Expect(revs).To(gomega.HaveKey(int64(5)))
	}, timeout, interval).Should(gomega.Succeed())

	// A restart is a revision, whoever asks for it.
	update(t, projectB, w, func(w *computev1alpha.Workload) {
		w.Spec.Template.Metadata.Annotations = map[string]string{computev1alpha.RestartedAtAnnotation: "2026-05-01T12:00:00Z"}
	})
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectB, w)
		g.Expect(cur.Status.CurrentRevision).To(gomega.Equal(int64(6)))
		revs := revisionsOf(g, projectB, w)
		g.Expect(revs).To(gomega.HaveLen(3))
		g.Expect(revs[6].Labels).To(gomega.HaveKeyWithValue(revision.TemplateHashLabel, cur.Status.CurrentTemplateHash))
	}, timeout, interval).Should(gomega.Succeed())

	// Undoing to revision 5's template renumbers it rather than adding one.
	var undo *computev1alpha.InstanceTemplateSpec
	g.Eventually(func(g gomega.Gomega) {
		r := revisionsOf(g, projectB, w)[5]
		var err error
		undo, err = revision.Template(&r)
		g.Expect(err).NotTo(gomega.HaveOccurred())
	}, timeout, interval).Should(gomega.Succeed())
	update(t, projectB, w, func(w *computev1alpha.Workload) { w.Spec.Template = *undo })
	g.Eventually(func(g gomega.Gomega) {
		revs := revisionsOf(g, projectB, w)
		g.Expect(getWorkload(g, projectB, w).Status.CurrentRevision).To(gomega.Equal(int64(7)))
		g.Expect(revs).To(gomega.HaveLen(3))
		g.Expect(revs).NotTo(gomega.HaveKey(int64(5)))
		r := revs[7]
		tpl, err := revision.Template(&r)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(tpl.Spec.Runtime.Sandbox.Containers[0].Image).To(gomega.Equal("ghcr.io/example/app:5.0"))
	}, timeout, interval).Should(gomega.Succeed())
}
