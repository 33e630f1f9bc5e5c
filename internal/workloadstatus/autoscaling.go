package workloadstatus

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/status"
)

// The autoscaling verdicts: each city's cell sets AutoscalingReady and
// AutoscalingLimited on its WorkloadDeployment; a placement's conditions
// aggregate its cities', the Workload's its placements'. Both are present
// only where a placement autoscales (scaleSettings.maxReplicas and
// metrics).

// scaler is the autoscaling conditions of one city or one placement,
// named by label in the messages of the conditions that aggregate it.
type scaler struct {
	label          string
	ready, limited metav1.Condition
}

// autoscalingTypes are the two condition types, in the order scaler holds
// them.
var autoscalingTypes = []string{computev1alpha.ConditionAutoscalingReady, computev1alpha.ConditionAutoscalingLimited}

// cityScaler reads the autoscaling conditions the city's cell set. A
// condition not set yet, set for an older generation than the cell last
// reported, or set while the deployment carried other scale settings than
// the placement's, is pending: Unknown, AwaitingAutoscaler. nil when the
// city has no deployment (there is nothing to autoscale yet).
func cityScaler(label string, wd *computev1alpha.WorkloadDeployment, settings computev1alpha.HorizontalScaleSettings) *scaler {
	if wd == nil {
		return nil
	}
	current := equality.Semantic.DeepEqual(wd.Spec.ScaleSettings, settings) && boundsReported(wd.Status.Autoscaling, settings)
	conds := make([]metav1.Condition, 0, len(autoscalingTypes))
	for _, t := range autoscalingTypes {
		c := meta.FindStatusCondition(wd.Status.Conditions, t)
		if !current || c == nil || c.ObservedGeneration < wd.Status.ObservedGeneration {
			conds = append(conds, metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: computev1alpha.ReasonAwaitingAutoscaler,
				Message: fmt.Sprintf("the %s cell has not evaluated the current scale settings of WorkloadDeployment %s yet", wd.Spec.CityCode, wd.Name)})
			continue
		}
		conds = append(conds, *c.DeepCopy())
	}
	return &scaler{label: label, ready: conds[0], limited: conds[1]}
}

// boundsReported reports whether the bounds the cell reports, if any, are
// settings': other bounds are an autoscaler not updated yet.
func boundsReported(as *computev1alpha.AutoscalingStatus, settings computev1alpha.HorizontalScaleSettings) bool {
	if as == nil || settings.MaxReplicas == nil {
		return true
	}
	return as.MinReplicas == settings.MinReplicas && as.MaxReplicas == *settings.MaxReplicas
}

// placementScaler aggregates the cities of a placement that autoscales;
// nil when it does not.
func placementScaler(p *computev1alpha.WorkloadPlacement, cities []cityView) *scaler {
	if p == nil || !p.ScaleSettings.Autoscales() {
		return nil
	}
	scalers := make([]scaler, 0, len(cities))
	for _, c := range cities {
		if c.scaler != nil {
			scalers = append(scalers, *c.scaler)
		}
	}
	if len(scalers) == 0 {
		pending := func(t string) metav1.Condition {
			return metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: computev1alpha.ReasonAwaitingAutoscaler,
				Message: "no city of the placement has a WorkloadDeployment yet"}
		}
		return &scaler{label: p.Name, ready: pending(computev1alpha.ConditionAutoscalingReady),
			limited: pending(computev1alpha.ConditionAutoscalingLimited)}
	}
	return aggregate(p.Name, scalers)
}

// aggregate is the conditions of label over scalers. AutoscalingReady:
// False wins over Unknown over True (AutoscalersReady). AutoscalingLimited:
// True wins over Unknown over False (WithinScalingLimits). The reason is
// the first winning scaler's; the message names each winning one.
func aggregate(label string, scalers []scaler) *scaler {
	names := make([]string, 0, len(scalers))
	for _, s := range scalers {
		names = append(names, s.label)
	}
	in := strings.Join(names, ", ")
	return &scaler{
		label: label,
		ready: worst(scalers, func(s scaler) metav1.Condition { return s.ready }, metav1.ConditionFalse, metav1.Condition{
			Type: computev1alpha.ConditionAutoscalingReady, Status: metav1.ConditionTrue,
			Reason: computev1alpha.ReasonAutoscalersReady, Message: "autoscalers ready in " + in,
		}),
		limited: worst(scalers, func(s scaler) metav1.Condition { return s.limited }, metav1.ConditionTrue, metav1.Condition{
			Type: computev1alpha.ConditionAutoscalingLimited, Status: metav1.ConditionFalse,
			Reason: computev1alpha.ReasonWithinScalingLimits, Message: "within minReplicas and maxReplicas in " + in,
		}),
	}
}

// worst is the condition of scalers (cond picks it): those at bad, else
// those Unknown, else good.
func worst(scalers []scaler, cond func(scaler) metav1.Condition, bad metav1.ConditionStatus, good metav1.Condition) metav1.Condition {
	for _, st := range []metav1.ConditionStatus{bad, metav1.ConditionUnknown} {
		var first *metav1.Condition
		var parts []string
		for _, s := range scalers {
			c := cond(s)
			if c.Status != st {
				continue
			}
			if first == nil {
				first = &c
			}
			msg := c.Message
			if msg == "" {
				msg = c.Reason
			}
			parts = append(parts, s.label+": "+msg)
		}
		if first != nil {
			return metav1.Condition{Type: good.Type, Status: st, Reason: first.Reason, Message: strings.Join(parts, "; ")}
		}
	}
	return good
}

// setAutoscaling sets the autoscaling conditions of s on conds, keeping
// the transition times of previous, or removes both when s is nil (nothing
// autoscales).
func setAutoscaling(conds, previous []metav1.Condition, s *scaler, generation int64, now metav1.Time) []metav1.Condition {
	out := slices.DeleteFunc(slices.Clone(conds), func(c metav1.Condition) bool { return slices.Contains(autoscalingTypes, c.Type) })
	if s == nil {
		return out
	}
	for _, t := range autoscalingTypes {
		if prev := meta.FindStatusCondition(previous, t); prev != nil {
			out = append(out, *prev.DeepCopy())
		}
	}
	for _, c := range []metav1.Condition{s.ready, s.limited} {
		c.ObservedGeneration = generation
		c.Message = status.Truncate(c.Message)
		status.SetCondition(&out, c, now)
	}
	slices.SortFunc(out, func(a, b metav1.Condition) int { return cmp.Compare(a.Type, b.Type) })
	return out
}

// workloadScaler aggregates the placements that autoscale; nil when none
// does.
func workloadScaler(placements []scaler) *scaler {
	if len(placements) == 0 {
		return nil
	}
	return aggregate("", placements)
}
