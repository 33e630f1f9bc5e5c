package autoscaler

import (
	"context"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// metricsAnswer is a MetricsAPI that says what the test sets.
type metricsAnswer struct{ available bool }

func (m *metricsAnswer) Available(context.Context) (bool, error) { return m.available, nil }

// newReconciler returns a reconciler on a fake cell holding objs (the
// narrow unit: what one reconcile decides when the metrics API comes and
// goes, which the real-plane suite cannot switch; test/integration/cell
// covers the rest on a real API server).
func newReconciler(t *testing.T, metrics MetricsAPI, objs ...client.Object) (*Reconciler, client.Client) {
	t.Helper()
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(computev1alpha.AddToScheme(s))
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&computev1alpha.WorkloadDeployment{}).Build()
	return &Reconciler{Client: c, Metrics: metrics, Clock: clocktesting.NewFakePassiveClock(time.Unix(1700000000, 0)), RecheckAfter: DefaultRecheckAfter}, c
}

func reconcileOnce(t *testing.T, r *Reconciler) ctrl.Result {
	t.Helper()
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "web"}})
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return res
}

func readyOf(t *testing.T, c client.Client) *metav1.Condition {
	t.Helper()
	wd := &computev1alpha.WorkloadDeployment{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "web"}, wd); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(wd.Status.Conditions, computev1alpha.ConditionAutoscalingReady)
}

func hpaExists(t *testing.T, c client.Client) bool {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "web"}, &autoscalingv2.HorizontalPodAutoscaler{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func TestTheMetricsAPIComingAndGoing(t *testing.T) {
	metrics := &metricsAnswer{}
	r, c := newReconciler(t, metrics, autoscalingWD())

	// No metrics: no HPA, said so, and looked at again.
	if res := reconcileOnce(t, r); res.RequeueAfter != DefaultRecheckAfter {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, DefaultRecheckAfter)
	}
	if hpaExists(t, c) {
		t.Error("an HPA without metrics")
	}
	if cond := readyOf(t, c); cond == nil || cond.Reason != computev1alpha.ReasonMetricsUnavailable || cond.ObservedGeneration != 3 {
		t.Errorf("AutoscalingReady = %+v", cond)
	}

	// The metrics come: the HPA is created, and nothing more is awaited.
	metrics.available = true
	if res := reconcileOnce(t, r); res.RequeueAfter != 0 {
		t.Errorf("RequeueAfter = %s with an HPA awaiting its first evaluation", res.RequeueAfter)
	}
	if !hpaExists(t, c) {
		t.Fatal("no HPA once the metrics came")
	}
	if cond := readyOf(t, c); cond == nil || cond.Reason != computev1alpha.ReasonAwaitingAutoscaler {
		t.Errorf("AutoscalingReady = %+v", cond)
	}

	// The HPA cannot read them: looked at again, for the metrics API may be gone.
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "web"}, hpa); err != nil {
		t.Fatal(err)
	}
	hpa.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{
		hpaCond(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale"),
		hpaCond(autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric"),
	}
	if err := c.Update(context.Background(), hpa); err != nil {
		t.Fatal(err)
	}
	if res := reconcileOnce(t, r); res.RequeueAfter != DefaultRecheckAfter {
		t.Errorf("RequeueAfter = %s for an HPA that cannot scale, want %s", res.RequeueAfter, DefaultRecheckAfter)
	}
	if cond := readyOf(t, c); cond == nil || cond.Reason != "FailedGetResourceMetric" {
		t.Errorf("AutoscalingReady = %+v", cond)
	}

	// They are gone: the HPA compute created goes too.
	metrics.available = false
	reconcileOnce(t, r)
	if hpaExists(t, c) {
		t.Error("the HPA stayed without metrics")
	}
	if cond := readyOf(t, c); cond == nil || cond.Reason != computev1alpha.ReasonMetricsUnavailable {
		t.Errorf("AutoscalingReady = %+v", cond)
	}
}

func TestADeploymentWithoutStatusOrAnnotationsIsNoProblem(t *testing.T) {
	wd := autoscalingWD()
	wd.Spec.ScaleSettings.MaxReplicas = nil
	r, c := newReconciler(t, &metricsAnswer{available: true}, wd)
	if res := reconcileOnce(t, r); res != (ctrl.Result{}) {
		t.Errorf("result %+v for a deployment that does not autoscale", res)
	}
	if hpaExists(t, c) || readyOf(t, c) != nil {
		t.Error("a deployment that does not autoscale got an HPA or a condition")
	}
	// A deployment that is gone is done.
	r, _ = newReconciler(t, &metricsAnswer{available: true})
	reconcileOnce(t, r)
}

func TestAStatusOfAnOlderReadIsNotWritten(t *testing.T) {
	r, c := newReconciler(t, &metricsAnswer{}, autoscalingWD())
	ctx := context.Background()
	stale := &computev1alpha.WorkloadDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "web"}, stale); err != nil {
		t.Fatal(err)
	}
	// The WorkloadDeployment controller writes meanwhile.
	newer := stale.DeepCopy()
	newer.Status.Replicas = 2
	if err := c.Status().Update(ctx, newer); err != nil {
		t.Fatal(err)
	}
	v := &verdict{status: metav1.ConditionFalse, reason: computev1alpha.ReasonMetricsUnavailable, message: "no metrics"}
	if err := r.writeStatus(ctx, stale, v); err != nil {
		t.Fatalf("a conflict is an error: %v", err)
	}
	if readyOf(t, c) != nil {
		t.Error("a status computed from an older read was written")
	}
	// The newer object's event brings the deployment back.
	reconcileOnce(t, r)
	if cond := readyOf(t, c); cond == nil || cond.Reason != computev1alpha.ReasonMetricsUnavailable {
		t.Errorf("AutoscalingReady = %+v", cond)
	}
}
