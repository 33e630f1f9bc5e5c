package workload

import (
	"context"
	"fmt"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/patch"
)

// workloadWebhook is the name of compute's validating webhook of
// Workloads (internal/webhook): the project plane must send their creates
// and updates to it.
const workloadWebhook = "validate.workloads.compute.datumapis.com"

// admissionRecheck is how often a Workload of a project plane without
// compute's admission looks again.
const admissionRecheck = 10 * time.Second

// EventAdmissionNotEnforced is the Warning event of a Workload whose
// project plane does not run compute's admission, so the Workload's
// changes are not federated.
const EventAdmissionNotEnforced = computev1alpha.ReasonAdmissionNotEnforced

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch

// admissionEnforced reports whether the project plane behind c sends the
// creates and updates of Workloads to compute's validating webhook,
// failing closed; why says what is missing when it does not.
func admissionEnforced(ctx context.Context, c client.Reader) (enforced bool, why string, err error) {
	var list admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := c.List(ctx, &list); err != nil {
		return false, "", fmt.Errorf("failed to list the project plane's ValidatingWebhookConfigurations: %w", err)
	}
	enforced, why = enforcedBy(list.Items)
	return enforced, why, nil
}

// enforcedBy is admissionEnforced's answer for the plane's configurations.
func enforcedBy(configs []admissionregistrationv1.ValidatingWebhookConfiguration) (enforced bool, why string) {
	why = "no ValidatingWebhookConfiguration holds the webhook " + workloadWebhook
	for _, cfg := range configs {
		for _, wh := range cfg.Webhooks {
			if wh.Name != workloadWebhook {
				continue
			}
			if wh.FailurePolicy != nil && *wh.FailurePolicy == admissionregistrationv1.Ignore {
				why = "ValidatingWebhookConfiguration " + cfg.Name + " lets Workloads through when " + workloadWebhook + " does not answer (failurePolicy Ignore)"
				continue
			}
			if coversWorkloads(wh.Rules) {
				return true, ""
			}
			why = "ValidatingWebhookConfiguration " + cfg.Name + " does not send the creates and updates of Workloads to " + workloadWebhook
		}
	}
	return false, why
}

// coversWorkloads reports whether rules match the creates and updates of
// compute.datumapis.com Workloads.
func coversWorkloads(rules []admissionregistrationv1.RuleWithOperations) bool {
	covers := func(op admissionregistrationv1.OperationType) bool {
		return slices.ContainsFunc(rules, func(r admissionregistrationv1.RuleWithOperations) bool {
			return (slices.Contains(r.Operations, op) || slices.Contains(r.Operations, admissionregistrationv1.OperationAll)) &&
				anyOf(r.APIGroups, computev1alpha.GroupVersion.Group) && anyOf(r.Resources, "workloads")
		})
	}
	return covers(admissionregistrationv1.Create) && covers(admissionregistrationv1.Update)
}

// anyOf reports whether values holds v or the wildcard.
func anyOf(values []string, v string) bool {
	return slices.Contains(values, v) || slices.Contains(values, "*")
}

// unadmitted holds a Workload of a project plane without compute's
// admission: nothing of it is federated or changed, its Progressing
// condition says why (Failing: a Warning event when it first does), and it
// looks again after admissionRecheck.
func unadmitted(ctx context.Context, c client.Client, recorder events.EventRecorder, w *computev1alpha.Workload, why string, now time.Time) (ctrl.Result, error) {
	msg := "compute does not federate this workload's changes: the project's control plane does not send Workloads to compute's admission webhooks (" +
		why + "); register them (config/webhook, docs/install.md)"
	was := meta.FindStatusCondition(w.Status.Conditions, computev1alpha.ConditionProgressing)
	if was == nil || was.Reason != computev1alpha.ReasonAdmissionNotEnforced {
		ctrl.LoggerFrom(ctx).Info("Not federating a Workload: its project plane does not run compute's admission webhooks", "why", why)
		recorder.Eventf(w, nil, corev1.EventTypeWarning, EventAdmissionNotEnforced, "Hold", msg)
	}
	_, err := patch.Status(ctx, c, w.DeepCopy(), func(w *computev1alpha.Workload) {
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
			Type: computev1alpha.ConditionProgressing, Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonAdmissionNotEnforced,
			Message: msg, ObservedGeneration: w.Generation, LastTransitionTime: metav1.NewTime(now),
		})
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to write the status of Workload %s: %w", w.Name, err)
	}
	return ctrl.Result{RequeueAfter: admissionRecheck}, nil
}
