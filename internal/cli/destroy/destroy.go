// Package destroy implements `datumctl compute destroy NAME`: show what
// goes, ask, delete the workload (its deployments and instances follow).
package destroy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/wait"
)

// DefaultTimeout bounds --wait.
const DefaultTimeout = 5 * time.Minute

// Options are the options of `destroy`: -o json or yaml print the
// destroyed workload; --wait waits until the workload and its instances
// are gone.
type Options struct {
	// ChangeOptions' --dry-run=client shows what goes and stops; server
	// also has the server check the delete without doing it.
	cmdutil.ChangeOptions
}

// NewCommand returns the destroy command.
func NewCommand(f *cmdutil.Factory) *cobra.Command { return cmdutil.CommandOf(newCommand(f)) }

// newCommand returns the command and the options it fills.
func newCommand(f *cmdutil.Factory) (*cobra.Command, *Options) {
	o := &Options{ChangeOptions: cmdutil.NewChangeOptions(f, DefaultTimeout)}
	cmd := o.ChangeCommand(f, &cobra.Command{
		Use:     "destroy NAME",
		Aliases: []string{"delete"},
		Short:   "Delete a workload and all of its instances",
		Long: "Show the workload's instances per city, ask for confirmation (or take --yes), and delete the\n" +
			"workload; its instances in every city are removed with it. Without a terminal, --yes is required.",
		Example: "  datumctl compute destroy web\n  datumctl compute destroy web --yes --wait\n  datumctl compute destroy web --dry-run",
	}, o, "Wait until the workload and its instances are gone.", "what would be destroyed")
	return cmd, o
}

// Run destroys the workload.
func (o *Options) Run(ctx context.Context) error {
	f, c, w := o.Factory, o.Clients, o.Workload
	insts, err := instances(ctx, c, w)
	if err != nil {
		return err
	}
	Summary(f.Streams.ErrOut, w, insts)
	uid := w.UID
	if o.DryRun != cmdutil.DryRunNone {
		// Nothing goes: no confirmation to ask.
		out, _ := f.Human(o.Output)
		if o.DryRun == cmdutil.DryRunServer {
			if err := c.Client.Delete(ctx, w.DeepCopy(), client.Preconditions{UID: &uid}, client.DryRunAll); err != nil {
				return fmt.Errorf("cannot destroy workload %s: %w", o.Name, err)
			}
		}
		_, _ = fmt.Fprintf(out, "Would destroy workload %s and its %s.\n", o.Name, cmdutil.Plural(len(insts), "instance", "instances"))
		return f.DryRunDone(out, o.DryRun, o.Output, w, c.Scheme)
	}
	if !f.Yes && !f.CanPrompt() {
		return cmdutil.UsageErrorf("refusing to destroy %s without confirmation: pass --yes", o.Name)
	}
	ok, err := f.Confirm(ctx, fmt.Sprintf("Destroy workload %s?", o.Name))
	if err != nil {
		return err
	}
	if !ok {
		return cmdutil.Failf("not destroyed: %s is unchanged", o.Name)
	}
	if err := c.Client.Delete(ctx, w, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cannot destroy workload %s: %w", o.Name, err)
	}
	out, terminal := f.Human(o.Output)
	if err := f.PrintResult(o.Output, w, c.Scheme); err != nil {
		return err
	}
	if !o.WaitFlags.Wait {
		_, _ = fmt.Fprintf(out, "Destroyed workload %s; its instances are being removed.\n", o.Name)
		return nil
	}
	switch err := o.awaitGone(ctx, out, terminal, len(insts)); {
	case err == nil:
		_, _ = fmt.Fprintf(out, "Destroyed workload %s and its instances.\n", o.Name)
		return nil
	case errors.Is(err, cmdutil.ErrTimeout):
		return cmdutil.PendingErrorf("%s is still being removed after %s; it continues on the server", o.Name, cmdutil.ShortDuration(o.WaitFlags.Timeout))
	case cmdutil.Interrupted(ctx):
		return &cmdutil.ExitError{Code: cmdutil.ExitInterrupted, Err: fmt.Errorf("stopped waiting; %s continues to be removed on the server", o.Name)}
	default:
		return err
	}
}

// awaitGone watches until the workload and its instances are gone,
// showing how many instances are left (left before the delete).
func (o *Options) awaitGone(ctx context.Context, out io.Writer, terminal bool, left int) error {
	w := o.Workload
	live := cmdutil.NewLive(out, terminal, o.Factory.Streams.Width)
	msg := fmt.Sprintf("Destroying %s: %s left", o.Name, cmdutil.Plural(left, "instance", "instances"))
	reconnecting := ""
	render := func() {
		line := msg
		if reconnecting != "" {
			line += " — reconnecting… (" + reconnecting + ")"
		}
		live.Update([]string{line}, line)
	}
	return o.Factory.WatchUntil(ctx, o.Clients.Client, cmdutil.Wait{
		Timeout: o.WaitFlags.Timeout,
		Sources: goneSources(w),
		Step: func(seen cmdutil.Seen) (bool, error) {
			gone, left := true, 0
			for _, obj := range seen[0] {
				gone = gone && obj.GetUID() != w.UID
			}
			for _, obj := range seen[1] {
				if obj.GetLabels()[computev1alpha.WorkloadUIDLabel] == string(w.UID) {
					left++
				}
			}
			msg = fmt.Sprintf("Destroying %s: %s left", o.Name, cmdutil.Plural(left, "instance", "instances"))
			render()
			return gone && left == 0, nil
		},
		Reconnecting: func(reason string) {
			reconnecting = reason
			render()
		},
	})
}

// goneSources are what a destroy watches until they are gone: the
// Workload, and the Instances labelled with its name (checked against its
// UID).
func goneSources(w *computev1alpha.Workload) []cmdutil.WatchSource {
	byName := labels.SelectorFromSet(labels.Set{computev1alpha.WorkloadNameLabel: w.Name})
	return append(wait.Sources(w.Namespace, w.Name),
		cmdutil.WatchSource{List: &computev1alpha.InstanceList{}, Object: &computev1alpha.Instance{}, Namespace: w.Namespace, Labels: byName})
}

// instances lists w's instances (workload-uid label).
func instances(ctx context.Context, c *cmdutil.Clients, w *computev1alpha.Workload) ([]computev1alpha.Instance, error) {
	var list computev1alpha.InstanceList
	if err := c.Client.List(ctx, &list, client.InNamespace(w.Namespace),
		client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(w.UID)}); err != nil {
		return nil, fmt.Errorf("cannot list the instances of workload %s: %w", w.Name, err)
	}
	return list.Items, nil
}

// Summary writes what destroying w removes: its instances per city.
func Summary(out io.Writer, w *computev1alpha.Workload, insts []computev1alpha.Instance) {
	perCity := map[string]int{}
	for _, i := range insts {
		perCity[i.Labels[computev1alpha.CityCodeLabel]]++
	}
	cities := cmdutil.WorkloadCities(w)
	for c := range perCity {
		if !slices.Contains(cities, c) && c != "" {
			cities = append(cities, c)
		}
	}
	slices.Sort(cities)
	parts := make([]string, 0, len(cities))
	for _, c := range cities {
		parts = append(parts, fmt.Sprintf("%s %d", c, perCity[c]))
	}
	_, _ = fmt.Fprintf(out, "Workload %s (namespace %s) will be destroyed:\n", w.Name, w.Namespace)
	_, _ = fmt.Fprintf(out, "  %s: %s\n", cmdutil.Plural(len(insts), "instance", "instances"), strings.Join(parts, ", "))
	_, _ = fmt.Fprintln(out, "  This cannot be undone: its revision history goes too.")
}
