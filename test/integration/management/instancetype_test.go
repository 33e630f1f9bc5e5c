package management

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// instanceTypeGracePeriod is the management role's grace period between
// status.deprecatedAt and Disabled in this suite.
const instanceTypeGracePeriod = time.Hour

var instanceTypeSeq int

// newInstanceType creates an Active InstanceType with a name of prefix
// unique in the suite (InstanceTypes are cluster-scoped, the planes shared).
func newInstanceType(t *testing.T, prefix, replacement string) *computev1alpha.InstanceType {
	t.Helper()
	instanceTypeSeq++
	it := &computev1alpha.InstanceType{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, instanceTypeSeq)},
		Spec: computev1alpha.InstanceTypeSpec{
			Resources: computev1alpha.InstanceTypeResources{CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi")},
			Lifecycle: computev1alpha.InstanceTypeLifecycle{Phase: computev1alpha.InstanceTypePhaseActive, ReplacementInstanceType: replacement},
		},
	}
	if err := clients[projectA].Create(context.Background(), it); err != nil {
		t.Fatalf("failed to create InstanceType %s: %v", it.Name, err)
	}
	return it
}

// changeInstanceType updates it's spec with f, returning the API's answer
// (a conflict with the InstanceType controller's status write is retried).
func changeInstanceType(it *computev1alpha.InstanceType, f func(*computev1alpha.InstanceType)) error {
	c := clients[projectA]
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &computev1alpha.InstanceType{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(it), cur); err != nil {
			return err
		}
		f(cur)
		return c.Update(context.Background(), cur)
	})
}

// recordDeprecation sets status.deprecatedAt, as an operator may through the
// status subresource (the InstanceType controller keeps a recorded time).
func recordDeprecation(t *testing.T, it *computev1alpha.InstanceType, at time.Time) {
	t.Helper()
	c := clients[projectA]
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &computev1alpha.InstanceType{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(it), cur); err != nil {
			return err
		}
		cur.Status.DeprecatedAt = &metav1.Time{Time: at}
		return c.Status().Update(context.Background(), cur)
	})
	if err != nil {
		t.Fatalf("failed to record the deprecation of %s: %v", it.Name, err)
	}
}

// phase returns a change to phase with replacement.
func phase(p computev1alpha.InstanceTypeLifecyclePhase, replacement string) func(*computev1alpha.InstanceType) {
	return func(it *computev1alpha.InstanceType) {
		it.Spec.Lifecycle = computev1alpha.InstanceTypeLifecycle{Phase: p, ReplacementInstanceType: replacement}
	}
}

// wantInstanceTypeDenial fails unless err is the InstanceType webhook's
// denial with a cause on field.
func wantInstanceTypeDenial(t *testing.T, err error, field string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), `admission webhook "validate.instancetypes.compute.datumapis.com" denied the request`) {
		t.Fatalf("got %v, want the InstanceType webhook's denial", err)
	}
	if got := causeFields(err); len(got) != 1 || got[0] != field {
		t.Fatalf("denial causes = %v, want %s (%v)", got, field, err)
	}
}

func TestInstanceTypeAdmission(t *testing.T) {
	ctx := context.Background()
	c := clients[projectA]

	t.Run("a type is created Active", func(t *testing.T) {
		it := &computev1alpha.InstanceType{
			ObjectMeta: metav1.ObjectMeta{Name: "born-deprecated"},
			Spec: computev1alpha.InstanceTypeSpec{
				Resources: computev1alpha.InstanceTypeResources{CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi")},
				Lifecycle: computev1alpha.InstanceTypeLifecycle{Phase: computev1alpha.InstanceTypePhaseDeprecated, ReplacementInstanceType: "datumcloud-d1-standard-4"},
			},
		}
		wantInstanceTypeDenial(t, c.Create(ctx, it), "spec.lifecycle.phase")
	})
	t.Run("cpu is immutable", func(t *testing.T) {
		it := newInstanceType(t, "fixed-cpu", "")
		wantInstanceTypeDenial(t, changeInstanceType(it, func(it *computev1alpha.InstanceType) {
			it.Spec.Resources.CPU = resource.MustParse("2")
		}), "spec.resources.cpu")
	})
	t.Run("memory is immutable", func(t *testing.T) {
		it := newInstanceType(t, "fixed-memory", "")
		wantInstanceTypeDenial(t, changeInstanceType(it, func(it *computev1alpha.InstanceType) {
			it.Spec.Resources.Memory = resource.MustParse("2Gi")
		}), "spec.resources.memory")
	})
	t.Run("phases only move forward", func(t *testing.T) {
		it := newInstanceType(t, "skipper", "")
		wantInstanceTypeDenial(t, changeInstanceType(it, phase(computev1alpha.InstanceTypePhaseDisabled, "datumcloud-d1-standard-4")), "spec.lifecycle.phase")
		if err := changeInstanceType(it, phase(computev1alpha.InstanceTypePhaseDeprecated, "datumcloud-d1-standard-4")); err != nil {
			t.Fatal(err)
		}
		wantInstanceTypeDenial(t, changeInstanceType(it, phase(computev1alpha.InstanceTypePhaseActive, "datumcloud-d1-standard-4")), "spec.lifecycle.phase")
	})
	t.Run("Deprecated needs an existing replacement", func(t *testing.T) {
		it := newInstanceType(t, "orphan", "")
		wantInstanceTypeDenial(t, changeInstanceType(it, phase(computev1alpha.InstanceTypePhaseDeprecated, "")), "spec.lifecycle.replacementInstanceType")
		wantInstanceTypeDenial(t, changeInstanceType(it, phase(computev1alpha.InstanceTypePhaseDeprecated, "no-such-type")), "spec.lifecycle.replacementInstanceType")
	})
	t.Run("Disabled only after the grace period since deprecatedAt", func(t *testing.T) {
		it := newInstanceType(t, "retiring", "")
		if err := changeInstanceType(it, phase(computev1alpha.InstanceTypePhaseDeprecated, "datumcloud-d1-standard-4")); err != nil {
			t.Fatal(err)
		}
		disable := phase(computev1alpha.InstanceTypePhaseDisabled, "datumcloud-d1-standard-4")
		wantInstanceTypeDenial(t, changeInstanceType(it, disable), "spec.lifecycle.phase") // no deprecatedAt yet
		recordDeprecation(t, it, time.Now().Add(-instanceTypeGracePeriod/2))
		wantInstanceTypeDenial(t, changeInstanceType(it, disable), "spec.lifecycle.phase")
		recordDeprecation(t, it, time.Now().Add(-2*instanceTypeGracePeriod))
		if err := changeInstanceType(it, disable); err != nil {
			t.Fatalf("Disabled after the grace period is refused: %v", err)
		}
	})
	t.Run("a replacement cannot leave Active or be deleted", func(t *testing.T) {
		successor := newInstanceType(t, "successor", "")
		newInstanceType(t, "predecessor", successor.Name)
		wantInstanceTypeDenial(t, changeInstanceType(successor, phase(computev1alpha.InstanceTypePhaseDeprecated, "datumcloud-d1-standard-4")), "spec.lifecycle.phase")
		wantInstanceTypeDenial(t, c.Delete(ctx, successor), "metadata.name")
	})
}

// getInstanceType reads it's current state from project A.
func getInstanceType(g gomega.Gomega, it *computev1alpha.InstanceType) *computev1alpha.InstanceType {
	cur := &computev1alpha.InstanceType{}
	g.Expect(clients[projectA].Get(context.Background(), client.ObjectKeyFromObject(it), cur)).To(gomega.Succeed())
	return cur
}

// wantReady waits until it's Ready condition has status and reason for its
// current generation, and returns the type then.
func wantReady(t *testing.T, it *computev1alpha.InstanceType, status metav1.ConditionStatus, reason string) *computev1alpha.InstanceType {
	t.Helper()
	var cur *computev1alpha.InstanceType
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		cur = getInstanceType(g, it)
		c := meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.InstanceTypeConditionReady)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.ObservedGeneration).To(gomega.Equal(cur.Generation))
		g.Expect(c.Status).To(gomega.Equal(status))
		g.Expect(c.Reason).To(gomega.Equal(reason))
	}, timeout, interval).Should(gomega.Succeed())
	return cur
}

func TestInstanceTypeStatus(t *testing.T) {
	it := newInstanceType(t, "status", "")
	cur := wantReady(t, it, metav1.ConditionTrue, computev1alpha.InstanceTypeReasonValid)
	if cur.Status.DeprecatedAt != nil {
		t.Fatalf("an Active type has status.deprecatedAt %v", cur.Status.DeprecatedAt)
	}

	t.Run("the status is written only when it changes", func(t *testing.T) {
		rv := cur.ResourceVersion
		gomega.NewWithT(t).Consistently(func(g gomega.Gomega) {
			g.Expect(getInstanceType(g, it).ResourceVersion).To(gomega.Equal(rv))
		}, 2*time.Second, interval).Should(gomega.Succeed())
	})

	var deprecatedAt metav1.Time
	t.Run("a deprecation is recorded once", func(t *testing.T) {
		before := time.Now().Add(-time.Second)
		if err := changeInstanceType(it, phase(computev1alpha.InstanceTypePhaseDeprecated, "datumcloud-d1-standard-4")); err != nil {
			t.Fatal(err)
		}
		g := gomega.NewWithT(t)
		g.Eventually(func(g gomega.Gomega) {
			cur = getInstanceType(g, it)
			g.Expect(cur.Status.DeprecatedAt).NotTo(gomega.BeNil())
		}, timeout, interval).Should(gomega.Succeed())
		if at := cur.Status.DeprecatedAt.Time; at.Before(before.Truncate(time.Second)) || at.After(time.Now()) {
			t.Fatalf("status.deprecatedAt = %v, want the time of the deprecation (after %v)", at, before)
		}
		deprecatedAt = *cur.Status.DeprecatedAt
		cur = wantReady(t, it, metav1.ConditionTrue, computev1alpha.InstanceTypeReasonValid)

		// A later change of the spec moves observedGeneration, never the
		// deprecation time.
		if err := changeInstanceType(it, func(it *computev1alpha.InstanceType) { it.Spec.Description = "retiring" }); err != nil {
			t.Fatal(err)
		}
		cur = wantReady(t, it, metav1.ConditionTrue, computev1alpha.InstanceTypeReasonValid)
		if !cur.Status.DeprecatedAt.Equal(&deprecatedAt) {
			t.Fatalf("status.deprecatedAt moved from %v to %v", deprecatedAt, cur.Status.DeprecatedAt)
		}
	})

	t.Run("a Disabled type is not Ready", func(t *testing.T) {
		// The grace period is measured from status.deprecatedAt: the
		// recorded deprecation is too recent, an older one is not.
		disable := phase(computev1alpha.InstanceTypePhaseDisabled, "datumcloud-d1-standard-4")
		wantInstanceTypeDenial(t, changeInstanceType(it, disable), "spec.lifecycle.phase")
		recordDeprecation(t, it, time.Now().Add(-2*instanceTypeGracePeriod).Truncate(time.Second))
		if err := changeInstanceType(it, disable); err != nil {
			t.Fatalf("Disabled after the grace period is refused: %v", err)
		}
		cur = wantReady(t, it, metav1.ConditionFalse, computev1alpha.InstanceTypeReasonDisabled)
		if cur.Status.DeprecatedAt == nil || !cur.Status.DeprecatedAt.Time.Before(deprecatedAt.Time) {
			t.Fatalf("status.deprecatedAt = %v, want the operator's earlier time kept", cur.Status.DeprecatedAt)
		}
	})
}

func TestWorkloadsAndTheInstanceTypeLifecycle(t *testing.T) {
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	typed := func(name, instanceType string) *computev1alpha.Workload {
		return makeWorkload(name, ns).withPlacement("edge", 1, "DFW").with(func(w *computev1alpha.Workload) {
			w.Spec.Template.Spec.Runtime.Resources.InstanceType = instanceType
		}).build()
	}

	t.Run("the mutating webhook stamps Datum's default type", func(t *testing.T) {
		w := typed("defaulted", "")
		if err := clients[projectA].Create(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		if got := w.Spec.Template.Spec.Runtime.Resources.InstanceType; got != "datumcloud-d1-standard-2" {
			t.Fatalf("instance type = %q, want datumcloud-d1-standard-2", got)
		}
	})

	t.Run("a deprecation shows on an existing Workload, and a new one on a Disabled type is refused", func(t *testing.T) {
		it := newInstanceType(t, "legacy-small", "")
		w := create(t, projectA, typed("on-legacy", it.Name))
		if err := changeInstanceType(it, phase(computev1alpha.InstanceTypePhaseDeprecated, "datumcloud-d1-standard-4")); err != nil {
			t.Fatal(err)
		}
		g := gomega.NewWithT(t)
		g.Eventually(func(g gomega.Gomega) {
			c := meta.FindStatusCondition(getWorkload(g, projectA, w).Status.Conditions, computev1alpha.InstanceTypeConditionDeprecated)
			g.Expect(c).NotTo(gomega.BeNil())
			g.Expect(c.Status).To(gomega.Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(gomega.Equal(fmt.Sprintf("InstanceType '%s' is deprecated; please migrate to 'datumcloud-d1-standard-4'.", it.Name)))
		}, timeout, interval).Should(gomega.Succeed())

		recordDeprecation(t, it, time.Now().Add(-2*instanceTypeGracePeriod))
		if err := changeInstanceType(it, phase(computev1alpha.InstanceTypePhaseDisabled, "datumcloud-d1-standard-4")); err != nil {
			t.Fatal(err)
		}
		g.Eventually(func(g gomega.Gomega) {
			st := getWorkload(g, projectA, w).Status
			g.Expect(meta.FindStatusCondition(st.Conditions, computev1alpha.InstanceTypeConditionDeprecated)).To(gomega.BeNil())
			c := meta.FindStatusCondition(st.Conditions, computev1alpha.InstanceTypeConditionDisabled)
			g.Expect(c).NotTo(gomega.BeNil())
			g.Expect(c.Message).To(gomega.ContainSubstring("please update your workload to 'datumcloud-d1-standard-4'"))
		}, timeout, interval).Should(gomega.Succeed())

		// The Workload on it can still be scaled; a new one is refused.
		update(t, projectA, w, func(w *computev1alpha.Workload) { w.Spec.Placements[0].ScaleSettings.MinReplicas = 2 })
		err := clients[projectA].Create(context.Background(), typed("new-on-legacy", it.Name))
		if !isWebhookDenial(err) || !strings.Contains(err.Error(), fmt.Sprintf("InstanceType '%s' is disabled", it.Name)) {
			t.Fatalf("a new Workload on a Disabled type: got %v, want a denial naming it", err)
		}
	})

	t.Run("the retired spelling is accepted", func(t *testing.T) {
		create(t, projectA, typed("legacy-spelling", "datumcloud/d1-standard-2"))
	})
}
