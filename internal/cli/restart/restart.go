// Package restart implements `datumctl compute restart NAME [--city C]`
// (also `rollout restart`): replace every instance of a workload, or only
// those in one city, one at a time.
//
// A whole-workload restart sets compute.datumapis.com/restartedAt on the
// Workload's template: a template change, so a new revision.
//
// A city restart must survive later reconciles of the Workload, which
// rewrite every WorkloadDeployment's template from the Workload's. So the
// CLI does not touch the city's WorkloadDeployment: it sets the Workload
// annotation compute.datumapis.com/restartedAt.<CITY> (for example
// compute.datumapis.com/restartedAt.DFW) to an RFC 3339 time, and the
// WorkloadReconciler copies it into the template of that city's
// WorkloadDeployments as compute.datumapis.com/restartedAt — keeping
// whichever of the two times (the template's own restartedAt and the
// city's) is later. The city's template hash changes, so only its
// instances roll; other cities are untouched; a later whole restart, being
// later, restarts the city again. City restarts are not template revisions.
package restart

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
	"github.com/citycells/compute/internal/cli/wait"
	"github.com/citycells/compute/internal/revision"
)

// CityRestartedAtAnnotation returns the city-restart annotation key of
// city.
func CityRestartedAtAnnotation(city string) string {
	return computev1alpha.CityRestartedAtAnnotationPrefix + city
}

// Options are the options of `restart`: -o json or yaml print the
// resulting workload; --wait waits for the restart to finish.
type Options struct {
	cmdutil.ChangeOptions
	// CityFlag is --city: restart only this city.
	cmdutil.CityFlag
}

// NewCommand returns the restart command.
func NewCommand(f *cmdutil.Factory) *cobra.Command { return cmdutil.CommandOf(newCommand(f)) }

// newCommand returns the command and the options it fills.
func newCommand(f *cmdutil.Factory) (*cobra.Command, *Options) {
	o := &Options{ChangeOptions: cmdutil.NewChangeOptions(f, wait.DefaultTimeout)}
	cmd := o.ChangeCommand(f, &cobra.Command{
		Use:   "restart NAME",
		Short: "Replace a workload's instances one at a time, everywhere or in one city",
		Long: "Restart a workload: every instance is deleted and recreated, one at a time, newest first, so the\n" +
			"workload keeps serving. With --city only that city's instances are replaced, and the restart survives\n" +
			"later changes to the workload.",
		Example: "  datumctl compute restart web\n  datumctl compute restart web --city DFW --wait\n" +
			"  datumctl compute restart web --dry-run=server -o yaml",
	}, o, "Wait for the restart to finish, with live per-city progress.", "what would change")
	o.AddCityFlag(cmd, f, "Restart only the instances in this city (a city code such as DFW).")
	return cmd, o
}

// Complete takes the workload name and normalises the city.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	o.CompleteCity()
	return o.WorkloadRef.Complete(cmd, args)
}

// Validate checks the flags.
func (o *Options) Validate() error { return o.ValidateWith(o.ValidateCity()) }

// Run restarts.
func (o *Options) Run(ctx context.Context) error {
	w := o.Workload
	cities := cmdutil.WorkloadCities(w)
	if o.City != "" && !slices.Contains(cities, o.City) {
		return cmdutil.Failf("workload %s does not run in %s; it runs in %s", o.Name, o.City, cmdutil.JoinCities(cities))
	}
	at := o.stamp(w)
	patch, err := Patch(w, o.City, at)
	if err != nil {
		return err
	}
	out, _ := o.Factory.Human(o.Output)
	if note := view.FailoverNote(o.Workload); note != "" {
		_, _ = fmt.Fprintln(out, note)
	}
	where := cmdutil.JoinCities(cities)
	if o.City != "" {
		where = o.City
	}
	if o.DryRun != cmdutil.DryRunNone {
		_, _ = fmt.Fprintf(out, "Would restart %s in %s: its instances would be replaced one at a time.\n", o.Name, where)
	}
	result, err := o.MergePatch(ctx, patch, "", "restart workload "+o.Name)
	switch {
	case err != nil:
		return err
	case o.DryRun != cmdutil.DryRunNone:
		return o.Factory.DryRunDone(out, o.DryRun, o.Output, result, o.Clients.Scheme)
	}
	exp, what := view.Expectation{}, "instances"
	if o.City != "" {
		exp.CityRestarts, what = map[string]string{o.City: at}, "its instances"
	}
	_, _ = fmt.Fprintf(out, "Restarting %s in %s: %s are replaced one at a time.\n", o.Name, where, what)
	return wait.Follow(ctx, &o.WorkloadWaitOptions, wait.Options{Expect: exp, Verb: "Restarting"}, true, wait.Finished("Restarted", o.Name))
}

// stamp returns the restart time: now, moved a second on when the
// workload already carries that exact time (two restarts within a second
// must both restart).
func (o *Options) stamp(w *computev1alpha.Workload) string {
	now := o.Factory.Now().UTC().Truncate(time.Second)
	key := computev1alpha.RestartedAtAnnotation
	current := w.Spec.Template.Metadata.Annotations[key]
	if o.City != "" {
		current = w.Annotations[CityRestartedAtAnnotation(o.City)]
	}
	if prev, err := time.Parse(time.RFC3339, current); err == nil && !now.After(prev) {
		now = prev.Add(time.Second)
	}
	return now.Format(time.RFC3339)
}

// Patch returns the JSON merge patch that restarts w at time at: in city,
// or everywhere when city is empty. A whole restart also drops the city
// restarts it supersedes.
func Patch(w *computev1alpha.Workload, city, at string) ([]byte, error) {
	if city != "" {
		return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
			CityRestartedAtAnnotation(city): at,
		}}})
	}
	annotations := map[string]any{revision.ChangeCauseAnnotation: "restart"}
	for k := range w.Annotations {
		if strings.HasPrefix(k, computev1alpha.CityRestartedAtAnnotationPrefix) {
			annotations[k] = nil
		}
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": annotations},
		"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": map[string]any{
			computev1alpha.RestartedAtAnnotation: at,
		}}}},
	})
}
