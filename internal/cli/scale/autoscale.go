package scale

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// MaxUtilization is the highest --cpu or --memory target, in percent of
// the Instances' requests (the server's limit on averageUtilization).
const MaxUtilization = 1000

// Autoscale are the flags that edit a placement's autoscaling.
type Autoscale struct {
	// Max is --max: the most instances per city.
	Max int32
	// CPU and Memory are --cpu and --memory: the average utilization
	// targets, in percent of the Instances' requests.
	CPU, Memory int32
	// NoAutoscale is --no-autoscale: remove maxReplicas and the metrics.
	NoAutoscale bool

	maxSet, cpuSet, memorySet bool
}

// addFlags adds the autoscaling flags to cmd.
func (a *Autoscale) addFlags(cmd *cobra.Command) {
	cmd.Flags().Int32Var(&a.Max, "max", 0, "Autoscale up to this many instances per city (with --cpu or --memory).")
	cmd.Flags().Int32Var(&a.CPU, "cpu", 0, "Autoscale on cpu: the target average utilization, in percent of the Instances' requests.")
	cmd.Flags().Int32Var(&a.Memory, "memory", 0, "Autoscale on memory: the target average utilization, in percent of the Instances' requests.")
	cmd.Flags().BoolVar(&a.NoAutoscale, "no-autoscale", false, "Stop autoscaling: remove --max and the metrics; every city runs --min instances.")
}

// complete records which flags were given.
func (a *Autoscale) complete(cmd *cobra.Command) {
	a.maxSet, a.cpuSet, a.memorySet = cmd.Flags().Changed("max"), cmd.Flags().Changed("cpu"), cmd.Flags().Changed("memory")
}

// set reports whether any autoscaling flag was given.
func (a *Autoscale) set() bool {
	return a.maxSet || a.cpuSet || a.memorySet || a.NoAutoscale
}

// validate checks the autoscaling flags on their own.
func (a *Autoscale) validate() error {
	switch {
	case a.NoAutoscale && (a.maxSet || a.cpuSet || a.memorySet):
		return cmdutil.UsageErrorf("--no-autoscale removes --max, --cpu and --memory: give it alone (with --min to set the instances per city)")
	case a.maxSet && (a.Max < 1 || a.Max > MaxReplicas):
		return cmdutil.UsageErrorf("--max must be between 1 and %d, got %d (--no-autoscale removes autoscaling)", MaxReplicas, a.Max)
	case a.cpuSet && (a.CPU < 1 || a.CPU > MaxUtilization):
		return cmdutil.UsageErrorf("--cpu must be a percentage between 1 and %d, got %d", MaxUtilization, a.CPU)
	case a.memorySet && (a.Memory < 1 || a.Memory > MaxUtilization):
		return cmdutil.UsageErrorf("--memory must be a percentage between 1 and %d, got %d", MaxUtilization, a.Memory)
	}
	return nil
}

// apply returns s with the flags applied: o's --min, then the autoscaling
// flags.
func (o *Options) apply(s computev1alpha.HorizontalScaleSettings) computev1alpha.HorizontalScaleSettings {
	out := *s.DeepCopy()
	if o.minSet {
		out.MinReplicas = o.Min
	}
	if o.NoAutoscale {
		out.MaxReplicas, out.Metrics = nil, nil
	}
	if o.maxSet {
		out.MaxReplicas = ptr.To(o.Max)
	}
	if o.cpuSet {
		out.Metrics = setUtilization(out.Metrics, corev1.ResourceCPU, o.CPU)
	}
	if o.memorySet {
		out.Metrics = setUtilization(out.Metrics, corev1.ResourceMemory, o.Memory)
	}
	return out
}

// setUtilization sets the target of the metric on name to percent of the
// requests, adding the metric when there is none; the others are kept.
func setUtilization(metrics []computev1alpha.MetricSpec, name corev1.ResourceName, percent int32) []computev1alpha.MetricSpec {
	target := computev1alpha.MetricTarget{AverageUtilization: ptr.To(percent)}
	for i := range metrics {
		if r := metrics[i].Resource; r != nil && r.Name == name {
			r.Target = target
			return metrics
		}
	}
	return append(metrics, computev1alpha.MetricSpec{Resource: &computev1alpha.ResourceMetricSource{Name: name, Target: target}})
}

// edit applies the flags to placement p and adds the operations to patch,
// path being p's scaleSettings. It refuses settings the server would: a
// ceiling below the floor, a ceiling without a metric, a metric without a
// ceiling.
func (o *Options) edit(p *computev1alpha.WorkloadPlacement, patch *cmdutil.JSONPatch, path string) error {
	before := p.ScaleSettings
	after := o.apply(before)
	switch m := after.MaxReplicas; {
	case m != nil && after.MinReplicas > *m && !o.maxSet:
		return cmdutil.WithHints(cmdutil.Failf("--min %d is above maxReplicas %d of placement %s", after.MinReplicas, *m, p.Name),
			"Raise it with --max, or stop autoscaling with --no-autoscale.")
	case m != nil && after.MinReplicas > *m:
		return cmdutil.Failf("--max %d is below minReplicas %d of placement %s: lower it with --min", *m, after.MinReplicas, p.Name)
	case m != nil && len(after.Metrics) == 0:
		return cmdutil.UsageErrorf("placement %s has no metric to autoscale on: add --cpu PERCENT (or --memory PERCENT)", p.Name)
	case m == nil && len(after.Metrics) > 0:
		return cmdutil.UsageErrorf("placement %s does not autoscale yet: add --max, the most instances per city", p.Name)
	}
	if o.minSet {
		patch.Replace(path+"/minReplicas", after.MinReplicas)
	}
	if o.NoAutoscale {
		if before.MaxReplicas != nil {
			patch.Remove(path + "/maxReplicas")
		}
		if len(before.Metrics) > 0 {
			patch.Remove(path + "/metrics")
		}
	}
	if o.maxSet {
		patch.Add(path+"/maxReplicas", *after.MaxReplicas)
	}
	if o.cpuSet || o.memorySet {
		patch.Add(path+"/metrics", after.Metrics)
	}
	p.ScaleSettings = after
	return nil
}

// describe says what the scale did (or would do): with --min alone on
// placements that do not autoscale, the instances per city; otherwise each
// placement's bounds and targets.
func (o *Options) describe(w *computev1alpha.Workload, scaled, autoscaled []string) string {
	if !o.set() && len(autoscaled) == 0 {
		return fmt.Sprintf("%s %s to %s per city in %s.", cmdutil.Would("Scaled", "scale", o.DryRun), o.Name,
			cmdutil.Plural(int(o.Min), "instance", "instances"), cmdutil.JoinCities(citiesOf(w, scaled)))
	}
	verb := cmdutil.Would("Set", "set", o.DryRun)
	var out []string
	for i := range w.Spec.Placements {
		p := &w.Spec.Placements[i]
		s := p.ScaleSettings
		cities := cmdutil.JoinCities(citiesOf(w, []string{p.Name}))
		switch {
		case slices.Contains(autoscaled, p.Name):
			out = append(out, fmt.Sprintf("%s %s (placement %s) to autoscale between %d and %d instances per city on %s in %s.",
				verb, o.Name, p.Name, s.MinReplicas, *s.MaxReplicas, targets(s.Metrics), cities))
		case slices.Contains(scaled, p.Name):
			out = append(out, fmt.Sprintf("%s %s (placement %s) to %s per city, without autoscaling, in %s.",
				verb, o.Name, p.Name, cmdutil.Plural(int(s.MinReplicas), "instance", "instances"), cities))
		}
	}
	return strings.Join(out, " ")
}

// targets lists metrics as "cpu 50% and memory 512Mi".
func targets(metrics []computev1alpha.MetricSpec) string {
	parts := make([]string, 0, len(metrics))
	for _, m := range metrics {
		if m.Resource == nil {
			continue
		}
		switch t := m.Resource.Target; {
		case t.AverageUtilization != nil:
			parts = append(parts, fmt.Sprintf("%s %d%%", m.Resource.Name, *t.AverageUtilization))
		case t.AverageValue != nil:
			parts = append(parts, fmt.Sprintf("%s %s", m.Resource.Name, t.AverageValue))
		case t.Value != nil:
			parts = append(parts, fmt.Sprintf("%s %s", m.Resource.Name, t.Value))
		}
	}
	return strings.Join(parts, " and ")
}
