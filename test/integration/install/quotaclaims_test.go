package install_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	"github.com/citycells/compute/internal/standin/quotaservice"
	"github.com/citycells/compute/test/clitest"
)

// claimsCap is the per-cell claim cap the test runs compute-quota with.
const claimsCap = 2

// TestACellClaimsOnlyTheQuotaOfProjectsItServes runs compute-quota as the
// quota-plane overlay says (its ServiceAccount and RBAC, the cells' claims
// isolation policy, --max-claims-per-source=2) against a project namespace
// that binds DFW only, granted 5 Instances, and attacks it with the cells'
// own tokens:
//
//   - cell-lhr, which serves no city of the project, creates 5 claims
//     labelled with its own name (the isolation policy admits them: the
//     label is its own). Each is refused ValidationFailed, saying that LHR
//     is not bound here and what to do, with a Warning event regarding the
//     claim and compute_quota_claims_refused_total counting it; they take
//     none of the 5 Instances, although they came first;
//   - cell-dfw, which serves DFW, creates 3 claims: the first 2 are granted
//     (the legitimate path, timed in the log), the third is refused for the
//     cap, saying so; once cell-dfw deletes its first claim, the third is
//     granted.
func TestACellClaimsOnlyTheQuotaOfProjectsItServes(t *testing.T) {
	installed(t)
	ctx := context.Background()
	admin := env.Client(project)
	ns := newNamespace(t, project, "claims-")
	if err := clitest.BindCities(ctx, admin, ns, "DFW"); err != nil {
		t.Fatal(err)
	}
	amounts, err := quotaservice.ComputeGrant(5, "5", "5Gi")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, quotaservice.DefaultGrantFor(project, "compute", ns, amounts)); err != nil {
		t.Fatal(err)
	}
	d := deploymentOf(t, render(t, "quota-plane"), "compute-quota")
	o := parseQuotaArgs(t, append(expandArgs(t, d, d.Spec.Template.Spec.Containers[0]), fmt.Sprintf("--max-claims-per-source=%d", claimsCap)))
	// Its Lease is another test's to prove; here one replica decides.
	o.LeaderElect, o.MetricsAddr, o.ProbeAddr = false, "0", "0"
	runQuota(t, o)

	dfw := env.ClientFor(serviceAccountConfig(t, project, cellsNamespace, cellDFW))
	lhr := env.ClientFor(serviceAccountConfig(t, project, cellsNamespace, cellLHR))
	notServed := counter(t, quotaservice.RefusalsMetric, quotaservice.ReasonCellServesNoBoundCity)
	capped := counter(t, quotaservice.RefusalsMetric, quotaservice.ReasonCellClaimCapReached)

	// The attack: claims of a cell that serves no city of the project.
	for i := range 5 {
		if err := lhr.Create(ctx, claimOf(ns, fmt.Sprintf("instance-web-lhr-%d", i), cellLHR)); err != nil {
			t.Fatalf("cell-lhr's own claim is refused by the API server (the isolation policy admits a cell's own label): %v", err)
		}
	}
	lhrSays := fmt.Sprintf("refused: cell %s serves city LHR, and namespace %s binds no Location of that city (bound: DFW)", cellLHR, ns)
	for i := range 5 {
		name := fmt.Sprintf("instance-web-lhr-%d", i)
		eventually(t, time.Minute, "cell-lhr's claim "+name+" is refused", func() error {
			return claimAnswered(ctx, ns, name, metav1.ConditionFalse, quotav1alpha1.ResourceClaimReasonValidationFailed, lhrSays)
		})
	}
	eventually(t, time.Minute, "the refusal is an event regarding the claim", func() error {
		return refusalEvent(ctx, ns, "instance-web-lhr-0", quotaservice.ReasonCellServesNoBoundCity, lhrSays)
	})
	if got := counter(t, quotaservice.RefusalsMetric, quotaservice.ReasonCellServesNoBoundCity); got < notServed+5 {
		t.Errorf("%s{reason=%s} went from %v to %v, want +5", quotaservice.RefusalsMetric, quotaservice.ReasonCellServesNoBoundCity, notServed, got)
	}

	// The legitimate path, next to it: the cell serving DFW is granted
	// what cell-lhr's claims would have taken, up to its cap.
	for i := range claimsCap + 1 {
		name := fmt.Sprintf("instance-web-dfw-%d", i)
		began := time.Now()
		if err := dfw.Create(ctx, claimOf(ns, name, cellDFW)); err != nil {
			t.Fatal(err)
		}
		if i == claimsCap {
			break
		}
		eventually(t, time.Minute, "cell-dfw's claim "+name+" is granted", func() error {
			return claimAnswered(ctx, ns, name, metav1.ConditionTrue, quotav1alpha1.ResourceClaimReasonQuotaAvailable, "granted")
		})
		t.Logf("cell-dfw's claim %s granted %s after its create", name, time.Since(began).Round(time.Millisecond))
	}
	third := fmt.Sprintf("instance-web-dfw-%d", claimsCap)
	capSays := fmt.Sprintf("refused: cell %s has %d ResourceClaims outstanding in this quota plane and may have at most %d (compute-quota --max-claims-per-source)",
		cellDFW, claimsCap+1, claimsCap)
	eventually(t, time.Minute, "cell-dfw's claim beyond the cap is refused", func() error {
		return claimAnswered(ctx, ns, third, metav1.ConditionFalse, quotav1alpha1.ResourceClaimReasonValidationFailed, capSays)
	})
	eventually(t, time.Minute, "the cap's refusal is an event regarding the claim", func() error {
		return refusalEvent(ctx, ns, third, quotaservice.ReasonCellClaimCapReached, capSays)
	})
	if got := counter(t, quotaservice.RefusalsMetric, quotaservice.ReasonCellClaimCapReached); got < capped+1 {
		t.Errorf("%s{reason=%s} went from %v to %v, want +1", quotaservice.RefusalsMetric, quotaservice.ReasonCellClaimCapReached, capped, got)
	}

	// A released claim makes room under the cap.
	began := time.Now()
	if err := dfw.Delete(ctx, claimOf(ns, "instance-web-dfw-0", cellDFW)); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "cell-dfw's third claim is granted once its first is released", func() error {
		return claimAnswered(ctx, ns, third, metav1.ConditionTrue, quotav1alpha1.ResourceClaimReasonQuotaAvailable, "granted")
	})
	t.Logf("cell-dfw's claim %s granted %s after its first claim was deleted", third, time.Since(began).Round(time.Millisecond))
	for i := range 5 {
		name := fmt.Sprintf("instance-web-lhr-%d", i)
		if err := claimAnswered(ctx, ns, name, metav1.ConditionFalse, quotav1alpha1.ResourceClaimReasonValidationFailed, lhrSays); err != nil {
			t.Errorf("cell-lhr's claim %s: %v", name, err)
		}
	}
}

// claimAnswered checks a claim's Granted condition, for its current
// generation.
func claimAnswered(ctx context.Context, ns, name string, status metav1.ConditionStatus, reason, says string) error {
	c := &quotav1alpha1.ResourceClaim{}
	if err := env.Client(project).Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		return err
	}
	cond := meta.FindStatusCondition(c.Status.Conditions, quotav1alpha1.ResourceClaimConditionGranted)
	switch {
	case cond == nil || cond.ObservedGeneration != c.Generation:
		return fmt.Errorf("not answered yet")
	case cond.Status != status || cond.Reason != reason || !strings.Contains(cond.Message, says):
		return fmt.Errorf("Granted=%s %s %q, want %s %s saying %q", cond.Status, cond.Reason, cond.Message, status, reason, says)
	}
	return nil
}

// refusalEvent checks that a Warning event with reason regards the claim,
// saying says.
func refusalEvent(ctx context.Context, ns, claim, reason, says string) error {
	list := &eventsv1.EventList{}
	if err := env.Client(project).List(ctx, list, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, e := range list.Items {
		if e.Regarding.Kind == quotav1alpha1.ResourceClaimKind && e.Regarding.Name == claim && e.Reason == reason {
			if e.Type != "Warning" || !strings.Contains(e.Note, says) {
				return fmt.Errorf("event %s is %s %q, want a Warning saying %q", e.Name, e.Type, e.Note, says)
			}
			return nil
		}
	}
	return fmt.Errorf("no %s event regards ResourceClaim %s/%s among %d events", reason, ns, claim, len(list.Items))
}

// counter reads a counter of controller-runtime's registry, which
// compute-quota runs in-process here, by its reason label.
func counter(t *testing.T, name, reason string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
