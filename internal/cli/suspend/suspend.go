// Package suspend implements `datumctl compute suspend NAME` and `resume
// NAME`: stop every instance of a workload, everywhere, without deleting
// anything, and start them again.
//
// Suspending sets the annotation compute.datumapis.com/suspended: "true"
// on the Workload (Datum's suspension annotation); resuming removes it.
// The management plane carries it to each city's WorkloadDeployment and
// the cells stop the instances — the runtime provider releases what runs,
// the instances keep their names and quota claims — and report each city
// suspended once every instance there has stopped. Resuming starts the
// same instances again. See api/v1alpha/suspension.go.
package suspend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
	"github.com/citycells/compute/internal/cli/wait"
)

// Options are the options of `suspend` and `resume`: -o json or yaml print
// the resulting workload; --wait waits until every city reports the
// workload suspended (resume: every instance ready again); --dry-run shows
// the change without making it.
type Options struct {
	cmdutil.ChangeOptions
	// Resume is set for `resume`.
	Resume bool
}

// NewSuspendCommand returns the suspend command.
func NewSuspendCommand(f *cmdutil.Factory) *cobra.Command {
	return newCommand(f, false)
}

// NewResumeCommand returns the resume command.
func NewResumeCommand(f *cmdutil.Factory) *cobra.Command {
	return newCommand(f, true)
}

// newCommand returns suspend, or resume.
func newCommand(f *cmdutil.Factory, resume bool) *cobra.Command {
	o := &Options{ChangeOptions: cmdutil.NewChangeOptions(f, wait.DefaultTimeout), Resume: resume}
	c := &cobra.Command{
		Use:   "suspend NAME",
		Short: "Stop every instance of a workload without deleting anything",
		Long: "Suspend a workload: every instance stops, in every city, and nothing is deleted — the workload, its\n" +
			"instances (with their names) and their quota claims stay. While it is suspended no instance is created,\n" +
			"replaced or removed; changes take effect when it is resumed. Resume it with `resume`.",
		Example: "  datumctl compute suspend web --wait\n  datumctl compute suspend web --dry-run -o yaml",
	}
	waitHelp := "Wait until every city reports the workload suspended (all its instances stopped), with live per-city progress."
	dryRunWhat := "the suspension"
	if resume {
		c.Use, c.Short = "resume NAME", "Start the instances of a suspended workload again"
		c.Long = "Resume a suspended workload: its instances start again in every city, with the same names and quota\n" +
			"claims, and changes made while it was suspended take effect."
		c.Example = "  datumctl compute resume web --wait"
		waitHelp = "Wait until every instance is ready again, with live per-city progress."
		dryRunWhat = "the resumption"
	}
	return o.ChangeCommand(f, c, o, waitHelp, dryRunWhat)
}

// verb returns the words of the command: "suspend"/"Suspending"/"Suspended"
// or their resume counterparts.
func (o *Options) verb() (cmd, ing, ed string) {
	if o.Resume {
		return "resume", "Resuming", "Resumed"
	}
	return "suspend", "Suspending", "Suspended"
}

// Run suspends or resumes.
func (o *Options) Run(ctx context.Context) error {
	w, c := o.Workload, o.Clients
	verb, ing, ed := o.verb()
	out, _ := o.Factory.Human(o.Output)
	cities := cmdutil.JoinCities(cmdutil.WorkloadCities(w))
	if computev1alpha.IsSuspended(w.Annotations) != o.Resume {
		if o.Resume {
			_, _ = fmt.Fprintf(out, "Nothing to do: %s is not suspended.\n", o.Name)
		} else {
			_, _ = fmt.Fprintf(out, "Nothing to do: %s is already suspended.\n", o.Name)
		}
		return o.follow(ctx, out, ing, ed)
	}
	body, err := Patch(o.Resume)
	if err != nil {
		return err
	}
	result, err := o.MergePatch(ctx, body, " while trying to "+verb+" it", verb+" workload "+o.Name)
	switch {
	case err != nil:
		return err
	case o.DryRun == cmdutil.DryRunClient:
		_, _ = fmt.Fprintf(out, "Would %s %s in %s. Dry run: nothing was changed.\n", verb, o.Name, cities)
		return o.Factory.PrintResult(o.Output, result, c.Scheme)
	case o.DryRun == cmdutil.DryRunServer:
		_, _ = fmt.Fprintf(out, "Server dry run: the server accepted the %s of %s; nothing was stored.\n", verb, o.Name)
		return o.Factory.PrintResult(o.Output, result, c.Scheme)
	case o.Resume:
		_, _ = fmt.Fprintf(out, "Resuming %s in %s: its instances start again under the same names.\n", o.Name, cities)
	default:
		_, _ = fmt.Fprintf(out, "Suspending %s in %s: its instances stop; nothing is deleted.\n", o.Name, cities)
	}
	return o.follow(ctx, out, ing, ed)
}

// follow waits when --wait says so, otherwise says how to watch, then
// prints the workload as -o asks.
func (o *Options) follow(ctx context.Context, out io.Writer, ing, ed string) error {
	if !o.WaitFlags.Wait && !o.Resume {
		_, _ = fmt.Fprintf(out, "Watch it with: %s\n", o.Factory.Cmd("status %s", o.Name))
	}
	return wait.Follow(ctx, &o.WorkloadWaitOptions, wait.Options{Expect: view.Expectation{Suspend: !o.Resume}, Verb: ing},
		o.Resume, wait.Finished(ed, o.Name))
}

// Patch returns the JSON merge patch that suspends a workload (resume:
// that lifts its suspension).
func Patch(resume bool) ([]byte, error) {
	var value any = computev1alpha.SuspendedAnnotationValue
	if resume {
		value = nil
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		computev1alpha.SuspendedAnnotation: value,
	}}})
}
