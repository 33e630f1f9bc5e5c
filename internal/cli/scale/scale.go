// Package scale implements `datumctl compute scale NAME --min N [--city C]`.
//
// Without --city it sets minReplicas of the workload's placements (all of
// them, or the one named by --placement): N instances in every city. With
// --city it sets the replicas of that one city through the scale
// subresource of the city's WorkloadDeployment, an override the
// Reconciler is the WorkloadReconciler: it keeps across reconciles; a later scale without --city
// clears the overrides of the placements it scales.
package scale

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/rollout"
	"github.com/citycells/compute/internal/cli/view"
	"github.com/citycells/compute/internal/cli/wait"
)

// MaxReplicas is the most instances a city may run.
const MaxReplicas = 1000

// Options are the options of `scale`: -o json or yaml print the resulting
// workload; --wait waits until the new number is ready.
type Options struct {
	cmdutil.WorkloadWaitOptions
	// CityFlag is --city: scale only this city.
	cmdutil.CityFlag
	// Min is --min: instances per city.
	Min int32
	// Placement is --placement: scale only this placement.
	Placement string

	minSet bool
}

// NewCommand returns the scale command.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd, _ := newCommand(f)
	return cmd
}

// newCommand returns the command and the options it fills.
func newCommand(f *cmdutil.Factory) (*cobra.Command, *Options) {
	o := &Options{WorkloadWaitOptions: cmdutil.NewWorkloadWaitOptions(f, cmdutil.NewObjectOutputFlags(), wait.DefaultTimeout)}
	cmd := cmdutil.WorkloadCommand(f, &cobra.Command{
		Use:   "scale NAME --min N",
		Short: "Change how many instances a workload runs per city",
		Long: "Set the number of instances per city. Without --city every city of the workload (or of --placement)\n" +
			"runs N instances; with --city only that city changes, and keeps its number until the next scale\n" +
			"without --city.",
		Example: "  datumctl compute scale web --min 3\n  datumctl compute scale web --min 5 --city DFW --wait",
	}, o, o.Output)
	cmd.Flags().Int32Var(&o.Min, "min", 0, "Instances per city (required).")
	o.AddCityFlag(cmd, f, "Scale only this city (a city code such as DFW).")
	cmd.Flags().StringVar(&o.Placement, "placement", "", "Scale only this placement (needed when a city is in several).")
	_ = cmd.RegisterFlagCompletionFunc("placement", cmdutil.CompletePlacements(f))
	o.WaitFlags.AddFlags(cmd, "Wait until the new number of instances is ready.")
	return cmd, o
}

// Complete takes the name and normalises the flags.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	o.CompleteCity()
	o.minSet = cmd.Flags().Changed("min")
	return o.WorkloadRef.Complete(cmd, args)
}

// Validate checks the flags.
func (o *Options) Validate() error {
	switch {
	case !o.minSet:
		return cmdutil.UsageErrorf("scale needs --min: the number of instances per city, e.g. --min 3")
	case o.Min < 0 || o.Min > MaxReplicas:
		return cmdutil.UsageErrorf("--min must be between 0 and %d, got %d", MaxReplicas, o.Min)
	}
	if err := o.ValidateCity(); err != nil {
		return err
	}
	return o.WorkloadWaitOptions.Validate()
}

// Run scales.
func (o *Options) Run(ctx context.Context) error {
	w := o.Workload
	if o.Placement != "" && !slices.ContainsFunc(w.Spec.Placements, func(p computev1alpha.WorkloadPlacement) bool { return p.Name == o.Placement }) {
		return cmdutil.Failf("workload %s has no placement %q; it has %s", o.Name, o.Placement, placementNames(w))
	}
	scale := o.scalePlacements
	if o.City != "" {
		scale = o.scaleCity
	}
	msg, err := scale(ctx, o.Clients, w)
	if err != nil {
		return err
	}
	out, terminal := o.Factory.Human(o.Output)
	_, _ = fmt.Fprintln(out, msg)
	return rollout.Follow(ctx, &o.WorkloadRef, o.Output, o.WaitFlags, wait.Options{Verb: "Scaling", Out: out, Terminal: terminal},
		false, func(p view.Progress) string { return fmt.Sprintf("Scaled %s: %s", o.Name, p.Line()) })
}

// scalePlacements sets minReplicas and clears per-city overrides.
func (o *Options) scalePlacements(ctx context.Context, c *cmdutil.Clients, w *computev1alpha.Workload) (string, error) {
	updated := w.DeepCopy()
	scaled := make([]string, 0, len(updated.Spec.Placements))
	var patch cmdutil.JSONPatch
	patch.GuardGeneration(w.Generation)
	for i := range updated.Spec.Placements {
		p := &updated.Spec.Placements[i]
		if o.Placement != "" && p.Name != o.Placement {
			continue
		}
		if m := p.ScaleSettings.MaxReplicas; m != nil && o.Min > *m {
			return "", cmdutil.WithHints(cmdutil.Failf("--min %d is above maxReplicas %d of placement %s", o.Min, *m, p.Name),
				"Raise maxReplicas in the workload manifest and deploy it with: "+o.Factory.Cmd("deploy -f workload.yaml"))
		}
		p.ScaleSettings.MinReplicas = o.Min
		patch.Test(fmt.Sprintf("/spec/placements/%d/name", i), p.Name)
		patch.Replace(fmt.Sprintf("/spec/placements/%d/scaleSettings/minReplicas", i), o.Min)
		scaled = append(scaled, p.Name)
	}
	if err := patch.Apply(ctx, c.Client, w); err != nil {
		return "", o.PatchError(err, " while scaling", "scale workload "+o.Name)
	}
	cleared, err := cmdutil.ClearReplicaOverrides(ctx, c, w, scaled)
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("Scaled %s to %s per city in %s.", o.Name, cmdutil.Plural(int(o.Min), "instance", "instances"),
		cmdutil.JoinCities(citiesOf(updated, scaled)))
	if len(cleared) > 0 {
		msg += fmt.Sprintf(" %s no longer keep their own number of instances.", cmdutil.JoinCities(cleared))
	}
	return msg, nil
}

// scaleCity sets the replicas of one city's deployment through its scale
// subresource.
func (o *Options) scaleCity(ctx context.Context, c *cmdutil.Clients, w *computev1alpha.Workload) (string, error) {
	cities := cmdutil.WorkloadCities(w)
	if !slices.Contains(cities, o.City) {
		return "", cmdutil.Failf("workload %s does not run in %s; it runs in %s", o.Name, o.City, cmdutil.JoinCities(cities))
	}
	wds, err := cmdutil.Deployments(ctx, c, w)
	if err != nil {
		return "", err
	}
	var match []*computev1alpha.WorkloadDeployment
	for i := range wds {
		wd := &wds[i]
		if wd.Spec.CityCode == o.City && (o.Placement == "" || wd.Spec.PlacementName == o.Placement) {
			match = append(match, wd)
		}
	}
	switch {
	case len(match) == 0:
		return "", cmdutil.WithHints(cmdutil.PendingErrorf("%s has no deployment in %s yet", o.Name, o.City),
			"See why with: "+o.Factory.Cmd("status %s", o.Name))
	case len(match) > 1:
		var names []string
		for _, wd := range match {
			names = append(names, wd.Spec.PlacementName)
		}
		slices.Sort(names)
		return "", cmdutil.UsageErrorf("%s runs in %s in placements %s: choose one with --placement", o.Name, o.City, strings.Join(names, ", "))
	}
	wd := match[0]
	if m := wd.Spec.ScaleSettings.MaxReplicas; m != nil && o.Min > *m {
		return "", cmdutil.Failf("--min %d is above maxReplicas %d of placement %s", o.Min, *m, wd.Spec.PlacementName)
	}
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, o.Min))
	scale := &autoscalingv1.Scale{}
	if err := c.Client.SubResource("scale").Patch(ctx, wd, patch, client.WithSubResourceBody(scale)); err != nil {
		return "", fmt.Errorf("cannot scale %s in %s: %w", o.Name, o.City, err)
	}
	return fmt.Sprintf("Scaled %s in %s to %s.", o.Name, o.City, cmdutil.Plural(int(o.Min), "instance", "instances")), nil
}

// citiesOf lists the cities of the named placements.
func citiesOf(w *computev1alpha.Workload, placements []string) []string {
	var out []string
	for i := range w.Spec.Placements {
		if p := &w.Spec.Placements[i]; slices.Contains(placements, p.Name) {
			out = append(out, cmdutil.PlacementCities(w, p)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// placementNames lists w's placements for messages.
func placementNames(w *computev1alpha.Workload) string {
	names := make([]string, 0, len(w.Spec.Placements))
	for _, p := range w.Spec.Placements {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}
