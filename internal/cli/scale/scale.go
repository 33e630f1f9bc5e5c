// Package scale implements `datumctl compute scale NAME --min N [--city C]`
// and `scale NAME --min N --max M --cpu P` (autoscaling).
//
// Without --city it sets minReplicas of the workload's placements (all of
// them, or the one named by --placement): N instances in every city. With
// --city it sets the replicas of that one city through the scale
// subresource of the city's WorkloadDeployment, an override the
// WorkloadReconciler keeps across reconciles; a later scale without --city
// clears the overrides of the placements it scales.
//
// --max, --cpu and --memory edit the placements' autoscaling (maxReplicas
// and the cpu and memory utilization targets), --no-autoscale removes it;
// they apply to every city of a placement, never with --city.
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
	"github.com/citycells/compute/internal/cli/wait"
)

// MaxReplicas is the most instances a city may run.
const MaxReplicas = 1000

// Options are the options of `scale`: -o json or yaml print the resulting
// workload; --wait waits until the new number is ready.
type Options struct {
	cmdutil.ChangeOptions
	// CityFlag is --city: scale only this city.
	cmdutil.CityFlag
	// Min is --min: instances per city.
	Min int32
	// Placement is --placement: scale only this placement.
	Placement string
	// Autoscale are --max, --cpu, --memory and --no-autoscale.
	Autoscale

	minSet bool
}

// NewCommand returns the scale command.
func NewCommand(f *cmdutil.Factory) *cobra.Command { return cmdutil.CommandOf(newCommand(f)) }

// newCommand returns the command and the options it fills.
func newCommand(f *cmdutil.Factory) (*cobra.Command, *Options) {
	o := &Options{ChangeOptions: cmdutil.NewChangeOptions(f, wait.DefaultTimeout)}
	cmd := o.ChangeCommand(f, &cobra.Command{
		Use:   "scale NAME --min N [--max M --cpu PERCENT]",
		Short: "Change how many instances a workload runs per city, or how it autoscales",
		Long: "Set the number of instances per city. Without --city every city of the workload (or of --placement)\n" +
			"runs N instances; with --city only that city changes, and keeps its number until the next scale\n" +
			"without --city.\n\n" +
			"--max and --cpu (or --memory) autoscale each city of the placements between --min and --max\n" +
			"instances on the Instances' average cpu (or memory) utilization, in percent of their requests;\n" +
			"each flag changes only what it names. --no-autoscale removes autoscaling: every city runs --min\n" +
			"instances again. While a placement autoscales, --city is refused: the city's count is its\n" +
			"autoscaler's. `status` shows each city's autoscaler.",
		Example: "  datumctl compute scale web --min 3\n  datumctl compute scale web --min 5 --city DFW --wait\n" +
			"  datumctl compute scale web --replicas 2 --dry-run=server\n" +
			"  datumctl compute scale web --min 1 --max 4 --cpu 50\n  datumctl compute scale web --no-autoscale --min 2",
	}, o, "Wait until the new number of instances is ready.", "what would change")
	cmd.Flags().Int32Var(&o.Min, "min", 0, "Instances per city; while autoscaling, the fewest.")
	// kubectl users type --replicas; it means the same here.
	cmd.Flags().Int32Var(&o.Min, "replicas", 0, "Same as --min (kubectl's name for it).")
	o.addFlags(cmd)
	o.AddCityFlag(cmd, f, "Scale only this city (a city code such as DFW).")
	cmd.Flags().StringVar(&o.Placement, "placement", "", "Scale only this placement (needed when a city is in several).")
	_ = cmd.RegisterFlagCompletionFunc("placement", cmdutil.CompletePlacements(f))
	return cmd, o
}

// Complete takes the name and normalises the flags.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	o.CompleteCity()
	if cmd.Flags().Changed("min") && cmd.Flags().Changed("replicas") {
		return cmdutil.UsageErrorf("--replicas is another name for --min: give one of them")
	}
	o.minSet = cmd.Flags().Changed("min") || cmd.Flags().Changed("replicas")
	o.complete(cmd)
	return o.WorkloadRef.Complete(cmd, args)
}

// Validate checks the flags.
func (o *Options) Validate() error {
	switch {
	case !o.minSet && !o.set():
		return cmdutil.UsageErrorf("scale needs --min (or --replicas): the number of instances per city, e.g. --min 3; " +
			"or --max, --cpu, --memory or --no-autoscale to change autoscaling")
	case o.minSet && (o.Min < 0 || o.Min > MaxReplicas):
		return cmdutil.UsageErrorf("--min must be between 0 and %d, got %d", MaxReplicas, o.Min)
	case o.City != "" && o.set():
		return cmdutil.UsageErrorf("--max, --cpu, --memory and --no-autoscale change the autoscaling of every city of a placement: drop --city")
	case o.minSet && o.maxSet && o.Min > o.Max:
		return cmdutil.UsageErrorf("--min %d is above --max %d", o.Min, o.Max)
	}
	if err := o.validate(); err != nil {
		return err
	}
	return o.ValidateWith(o.ValidateCity())
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
	msg, result, err := scale(ctx, o.Clients, w)
	if err != nil {
		return err
	}
	out, _ := o.Factory.Human(o.Output)
	_, _ = fmt.Fprintln(out, msg)
	if o.DryRun != cmdutil.DryRunNone {
		return o.Factory.DryRunDone(out, o.DryRun, o.Output, result, o.Clients.Scheme)
	}
	return wait.Follow(ctx, &o.WorkloadWaitOptions, wait.Options{Verb: "Scaling"}, false, wait.Finished("Scaled", o.Name))
}

// scalePlacements sets minReplicas and clears per-city overrides. It
// returns what it says and the workload as it is (or would be) after.
func (o *Options) scalePlacements(ctx context.Context, c *cmdutil.Clients, w *computev1alpha.Workload) (string, *computev1alpha.Workload, error) {
	updated := w.DeepCopy()
	scaled := make([]string, 0, len(updated.Spec.Placements))
	var patch cmdutil.JSONPatch
	patch.GuardGeneration(w.Generation)
	var autoscaled []string
	for i := range updated.Spec.Placements {
		p := &updated.Spec.Placements[i]
		if o.Placement != "" && p.Name != o.Placement {
			continue
		}
		patch.Test(fmt.Sprintf("/spec/placements/%d/name", i), p.Name)
		if err := o.edit(p, &patch, fmt.Sprintf("/spec/placements/%d/scaleSettings", i)); err != nil {
			return "", nil, err
		}
		if p.ScaleSettings.Autoscales() {
			autoscaled = append(autoscaled, p.Name)
		} else {
			scaled = append(scaled, p.Name)
		}
	}
	result := updated
	if o.DryRun != cmdutil.DryRunClient {
		// The server's answer is the workload after (with server dry-run,
		// as it would be).
		result = w.DeepCopy()
		if err := patch.Apply(ctx, c.Client, result, cmdutil.PatchOptions(o.DryRun)...); err != nil {
			return "", nil, o.PatchError(err, " while scaling", "scale workload "+o.Name)
		}
	}
	var cleared []string
	if o.minSet || o.NoAutoscale {
		// A city's own number gives way to the placement's; an
		// autoscaled city's number is its autoscaler's.
		var err error
		if cleared, err = cmdutil.ClearReplicaOverrides(ctx, c, w, scaled, o.DryRun); err != nil {
			return "", nil, err
		}
	}
	msg := o.describe(updated, scaled, autoscaled)
	if len(cleared) > 0 {
		msg += fmt.Sprintf(" %s no longer keep their own number of instances.", cmdutil.JoinCities(cleared))
		if o.DryRun != cmdutil.DryRunNone {
			msg = strings.Replace(msg, "no longer keep", "would no longer keep", 1)
		}
	}
	return msg, result, nil
}

// scaleCity sets the replicas of one city's deployment through its scale
// subresource.
func (o *Options) scaleCity(ctx context.Context, c *cmdutil.Clients, w *computev1alpha.Workload) (string, *computev1alpha.Workload, error) {
	cities := cmdutil.WorkloadCities(w)
	if !slices.Contains(cities, o.City) {
		return "", nil, cmdutil.Failf("workload %s does not run in %s; it runs in %s", o.Name, o.City, cmdutil.JoinCities(cities))
	}
	wds, err := cmdutil.Deployments(ctx, c, w)
	if err != nil {
		return "", nil, err
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
		return "", nil, cmdutil.WithHints(cmdutil.PendingErrorf("%s has no deployment in %s yet", o.Name, o.City),
			"See why with: "+o.Factory.Cmd("status %s", o.Name))
	case len(match) > 1:
		var names []string
		for _, wd := range match {
			names = append(names, wd.Spec.PlacementName)
		}
		slices.Sort(names)
		return "", nil, cmdutil.UsageErrorf("%s runs in %s in placements %s: choose one with --placement", o.Name, o.City, strings.Join(names, ", "))
	}
	wd := match[0]
	if s := placementSettings(w, wd); s.Autoscales() {
		return "", nil, cmdutil.WithHints(cmdutil.Failf("placement %s autoscales %s between %d and %d instances: its autoscaler sets the count",
			wd.Spec.PlacementName, o.City, s.MinReplicas, *s.MaxReplicas),
			"Change the bounds of every city with: "+o.Factory.Cmd("scale %s --min N --max M", o.Name),
			"Or stop autoscaling with: "+o.Factory.Cmd("scale %s --no-autoscale --min N", o.Name))
	}
	if m := wd.Spec.ScaleSettings.MaxReplicas; m != nil && o.Min > *m {
		return "", nil, cmdutil.Failf("--min %d is above maxReplicas %d of placement %s", o.Min, *m, wd.Spec.PlacementName)
	}
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, o.Min))
	if o.DryRun != cmdutil.DryRunClient {
		opts := []client.SubResourcePatchOption{client.WithSubResourceBody(&autoscalingv1.Scale{})}
		if o.DryRun == cmdutil.DryRunServer {
			opts = append(opts, client.DryRunAll)
		}
		if err := c.Client.SubResource("scale").Patch(ctx, wd, patch, opts...); err != nil {
			return "", nil, fmt.Errorf("cannot scale %s in %s: %w", o.Name, o.City, err)
		}
	}
	return fmt.Sprintf("%s %s in %s to %s.", cmdutil.Would("Scaled", "scale", o.DryRun), o.Name, o.City,
		cmdutil.Plural(int(o.Min), "instance", "instances")), w, nil
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

// placementSettings are the scale settings of wd's placement as the
// workload asks them now (the deployment may not carry them yet).
func placementSettings(w *computev1alpha.Workload, wd *computev1alpha.WorkloadDeployment) computev1alpha.HorizontalScaleSettings {
	for _, p := range w.Spec.Placements {
		if p.Name == wd.Spec.PlacementName {
			return p.ScaleSettings
		}
	}
	return wd.Spec.ScaleSettings
}
