// Package events implements `datumctl compute events WORKLOAD`: what
// happened to a workload and its instances, oldest first, as kubectl
// events shows it — the platform's own events on the Workload and its
// deployments, and each instance's, among them the events its city's
// kubelet and scheduler wrote about its container (image pulled or not,
// started, killed, out of memory, back-off, probe failures), which compute
// carries to the project.
package events

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// Options are the options of `events`.
type Options struct {
	cmdutil.ProjectOptions
	// CityFlag is --city: only the instances' events of this city.
	cmdutil.CityFlag
	// Workload is the workload.
	Workload string
	// Types is --types: only events of these types.
	Types []string
	// Watch is -w: print the events, then each new one as it comes.
	Watch bool

	// regarding are the kinds and names of the workload's objects.
	regarding map[corev1.ObjectReference]bool
}

// NewCommand returns the events command.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	o := &Options{ProjectOptions: cmdutil.NewProjectOptions(f, cmdutil.NewObjectOutputFlags())}
	cmd := cmdutil.WorkloadCommand(f, &cobra.Command{
		Use:   "events NAME",
		Short: "Show what happened to a workload and its instances, oldest first",
		Long: "Show the events of a workload, its deployments and its instances, oldest first: compute's own\n" +
			"(quota, rollouts, failover) and what each city's nodes said about the instances' containers\n" +
			"(image pulled or not, started, killed, out of memory, back-off, probe failures).\n" +
			"Events are kept about an hour.",
		Example: "  datumctl compute events web\n" +
			"  datumctl compute events web --types Warning --city DFW\n" +
			"  datumctl compute events web -w\n" +
			"  datumctl compute events web -o json",
	}, o, o.Output)
	o.AddCityFlag(cmd, f, "Only the instances' events of this city (a city code such as DFW).")
	cmd.Flags().StringSliceVar(&o.Types, "types", nil, "Only events of these types (Normal, Warning).")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "After the events so far, print each new one as it comes (Ctrl-C ends).")
	return cmd
}

// Complete takes the workload name.
func (o *Options) Complete(_ *cobra.Command, args []string) error {
	o.Workload = args[0]
	o.CompleteCity()
	for i, t := range o.Types {
		o.Types[i] = strings.ToUpper(t[:min(1, len(t))]) + strings.ToLower(t[min(1, len(t)):])
	}
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	for _, t := range o.Types {
		if t != corev1.EventTypeNormal && t != corev1.EventTypeWarning {
			return cmdutil.UsageErrorf("--types: %q is not an event type: use Normal or Warning", t)
		}
	}
	if o.Watch && !o.Output.IsTable() {
		return cmdutil.UsageErrorf("--watch prints a table: leave out -o %s", o.Output.Format)
	}
	return o.ValidateWith(o.ValidateCity())
}

// Run shows the events.
func (o *Options) Run(ctx context.Context) error {
	c := o.Clients
	w := &computev1alpha.Workload{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: o.Workload}, w); err != nil {
		if apierrors.IsNotFound(err) {
			return cmdutil.WithHints(fmt.Errorf("workload %q not found in namespace %s", o.Workload, c.Namespace),
				"List the workloads with: "+o.Factory.Cmd("workloads"))
		}
		return fmt.Errorf("cannot read workload %s: %w", o.Workload, err)
	}
	if err := o.readObjects(ctx, w); err != nil {
		return err
	}
	var list corev1.EventList
	if err := c.Client.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
		return cmdutil.WithHints(fmt.Errorf("cannot list the events of namespace %s: %w", c.Namespace, err),
			"Reading events needs the view role (or any role that may list events) in the project.")
	}
	evs := o.filter(list.Items)
	if !o.Output.IsTable() {
		return cmdutil.PrintObject(o.Factory.Streams.Out, o.Output.Format, &corev1.EventList{Items: evs}, c.Scheme)
	}
	now := o.Factory.Now()
	t := newTable()
	for i := range evs {
		addRow(t, &evs[i], now)
	}
	s := o.Factory.Streams
	if len(evs) == 0 && !o.Watch {
		_, _ = fmt.Fprintf(s.ErrOut, "No events for workload %s%s in the last hour.\n", o.Workload, o.scope())
		return nil
	}
	if err := t.RenderTo(s); err != nil || !o.Watch {
		return err
	}
	return o.follow(ctx, list.ResourceVersion, s.Out)
}

// scope describes the filters for the "nothing found" message.
func (o *Options) scope() string {
	var parts []string
	if len(o.Types) > 0 {
		parts = append(parts, " of type "+strings.Join(o.Types, " or "))
	}
	if o.City != "" {
		parts = append(parts, " in "+o.City)
	}
	return strings.Join(parts, "")
}

// filter keeps the events of the workload (the filters applied), oldest
// first.
func (o *Options) filter(all []corev1.Event) []corev1.Event {
	var out []corev1.Event
	for i := range all {
		if o.keep(&all[i]) {
			out = append(out, all[i])
		}
	}
	slices.SortStableFunc(out, func(a, b corev1.Event) int { return lastSeen(&a).Compare(lastSeen(&b)) })
	return out
}

// readObjects records the workload's objects events may regard: itself,
// its deployments and its instances.
func (o *Options) readObjects(ctx context.Context, w *computev1alpha.Workload) error {
	c := o.Clients
	o.regarding = map[corev1.ObjectReference]bool{{Kind: computev1alpha.WorkloadKind, Name: w.Name}: true}
	sel := client.MatchingLabels{computev1alpha.WorkloadNameLabel: w.Name}
	var wds computev1alpha.WorkloadDeploymentList
	if err := c.Client.List(ctx, &wds, client.InNamespace(c.Namespace), sel); err != nil {
		return fmt.Errorf("cannot list the deployments of workload %s: %w", w.Name, err)
	}
	for i := range wds.Items {
		o.regarding[corev1.ObjectReference{Kind: computev1alpha.WorkloadDeploymentKind, Name: wds.Items[i].Name}] = true
	}
	var insts computev1alpha.InstanceList
	if err := c.Client.List(ctx, &insts, client.InNamespace(c.Namespace), sel); err != nil {
		return fmt.Errorf("cannot list the instances of workload %s: %w", w.Name, err)
	}
	for i := range insts.Items {
		o.regarding[corev1.ObjectReference{Kind: computev1alpha.InstanceKind, Name: insts.Items[i].Name}] = true
	}
	return nil
}

// keep reports whether ev is one of the workload's that the flags keep:
// labelled with its name (compute labels the events it carries from the
// cities) or regarding one of its objects, and not a Workload's summary
// copy of an instance's event (the instance's own is shown).
func (o *Options) keep(ev *corev1.Event) bool {
	if _, summary := ev.Labels[computev1alpha.EventSummaryOfLabel]; summary {
		return false
	}
	ref := corev1.ObjectReference{Kind: ev.InvolvedObject.Kind, Name: ev.InvolvedObject.Name}
	if ev.Labels[computev1alpha.WorkloadNameLabel] != o.Workload && !o.regarding[ref] {
		return false
	}
	if len(o.Types) > 0 && !slices.Contains(o.Types, ev.Type) {
		return false
	}
	return o.City == "" || ev.Labels[computev1alpha.CityCodeLabel] == o.City
}

// follow prints each new or changed event of the workload until ctx ends,
// watching from resourceVersion and again after the watch closes.
func (o *Options) follow(ctx context.Context, resourceVersion string, out io.Writer) error {
	c := o.Clients
	for ctx.Err() == nil {
		wi, err := c.Client.Watch(ctx, &corev1.EventList{}, client.InNamespace(c.Namespace),
			&client.ListOptions{Raw: watchFrom(resourceVersion)})
		if err != nil {
			return fmt.Errorf("cannot watch the events of namespace %s: %w", c.Namespace, err)
		}
		resourceVersion = o.printChanges(ctx, wi, resourceVersion, out)
	}
	return nil
}

// printChanges prints the workload's events wi brings until it closes or
// ctx ends, and returns the last resource version seen ("" after an
// expired one: the next watch starts from now).
func (o *Options) printChanges(ctx context.Context, wi watch.Interface, resourceVersion string, out io.Writer) string {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return resourceVersion
		case e, open := <-wi.ResultChan():
			if !open {
				return resourceVersion
			}
			if e.Type == watch.Error {
				return ""
			}
			ev, ok := e.Object.(*corev1.Event)
			if !ok {
				continue
			}
			resourceVersion = ev.ResourceVersion
			if (e.Type == watch.Added || e.Type == watch.Modified) && o.keep(ev) {
				t := newTable()
				t.NoHeaders = true
				addRow(t, ev, o.Factory.Now())
				_ = t.Render(out, false, 0)
			}
		}
	}
}

// newTable is the events table.
func newTable() *cmdutil.Table {
	return cmdutil.NewTable("LAST SEEN", "TYPE", "REASON", "OBJECT", "CITY", "MESSAGE~")
}

// watchFrom are the options of a watch from resourceVersion.
func watchFrom(resourceVersion string) *metav1.ListOptions {
	return &metav1.ListOptions{ResourceVersion: resourceVersion}
}

// addRow adds ev to t.
func addRow(t *cmdutil.Table, ev *corev1.Event, now time.Time) {
	msg := ev.Message
	if ev.Count > 1 {
		msg += fmt.Sprintf(" (x%d over %s)", ev.Count, cmdutil.Age(ev.FirstTimestamp.Time, now))
	}
	city := ev.Labels[computev1alpha.CityCodeLabel]
	if city == "" {
		city = "-"
	}
	t.AddRow(cmdutil.Age(lastSeen(ev), now), ev.Type, ev.Reason,
		strings.ToLower(ev.InvolvedObject.Kind)+"/"+ev.InvolvedObject.Name, city, msg)
}

// lastSeen is when ev was last seen.
func lastSeen(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}
