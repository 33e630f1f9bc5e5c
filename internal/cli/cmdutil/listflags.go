package cmdutil

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ListFlags are kubectl's list flags: -l/--selector, -A/--all-namespaces,
// --no-headers, -w/--watch, --sort-by and --show-labels.
type ListFlags struct {
	// Selector is -l/--selector, a label selector ("app=web,tier!=db").
	Selector string
	// AllNamespaces is -A/--all-namespaces.
	AllNamespaces bool
	// NoHeaders is --no-headers.
	NoHeaders bool
	// Watch is -w/--watch: after the list, print what changes until Ctrl-C.
	Watch bool
	// SortBy is --sort-by: a field path (.metadata.creationTimestamp) to
	// order the items by instead of the command's own order.
	SortBy string
	// ShowLabels is --show-labels: a last LABELS column in the table.
	ShowLabels bool

	selector labels.Selector
	sortBy   *FieldPath
}

// AddFlags binds the flags to cmd.
func (l *ListFlags) AddFlags(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&l.Selector, "selector", "l", l.Selector,
		"Only objects whose labels match this selector (e.g. -l app=web,tier!=db).")
	cmd.Flags().BoolVarP(&l.AllNamespaces, "all-namespaces", "A", l.AllNamespaces,
		"List across every namespace (adds a NAMESPACE column).")
	cmd.Flags().BoolVar(&l.NoHeaders, "no-headers", l.NoHeaders, "Leave the header line out of the table.")
	cmd.Flags().BoolVarP(&l.Watch, "watch", "w", l.Watch,
		"After listing, print each object again when it changes, until Ctrl-C.")
	l.AddSortByFlag(cmd)
	l.AddShowLabelsFlag(cmd)
}

// AddShowLabelsFlag binds --show-labels alone, for lists that take only
// some of the list flags.
func (l *ListFlags) AddShowLabelsFlag(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&l.ShowLabels, "show-labels", l.ShowLabels,
		"Add a LABELS column with each object's labels (k=v,k2=v2) to the table.")
}

// AddLabelsColumn adds the LABELS column --show-labels asks for to t, a
// table of objs, a row each in order: "k=v,k2=v2" sorted by key, as
// kubectl prints them, "<none>" for no label. Without --show-labels it
// does nothing.
func (l *ListFlags) AddLabelsColumn(t *Table, objs ...client.Object) {
	if l == nil || !l.ShowLabels {
		return
	}
	t.Columns = append(t.Columns, Column{Header: "LABELS"})
	for i := range t.Rows {
		cell := labels.FormatLabels(nil)
		if i < len(objs) {
			cell = labels.FormatLabels(objs[i].GetLabels())
		}
		t.Rows[i] = append(t.Rows[i], cell)
	}
}

// AddSortByFlag binds --sort-by alone, for lists that take only some of
// the list flags.
func (l *ListFlags) AddSortByFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&l.SortBy, "sort-by", l.SortBy,
		"Order the items by this field, a JSONPath such as .metadata.creationTimestamp or '{.metadata.name}'.")
}

// Validate parses the selector.
func (l *ListFlags) Validate() error {
	sel, err := labels.Parse(l.Selector)
	if err != nil {
		return UsageErrorf("-l %q: %v", l.Selector, err)
	}
	l.selector = sel
	if l.SortBy != "" {
		p, err := ParseFieldPath(l.SortBy)
		if err != nil {
			return UsageErrorf("--sort-by: %v", err)
		}
		l.sortBy = p
	}
	return nil
}

// sortItems orders items by --sort-by, after the command's own order.
func sortItems[T any, PT interface {
	*T
	client.Object
}](l *ListFlags, items []T) error {
	if l == nil || l.sortBy == nil {
		return nil
	}
	return SortByField[T, PT](items, l.sortBy)
}

// Options returns the list options: the namespace (none with
// --all-namespaces) and the selector with the extra label matches of the
// command's own filters (--workload, --city).
func (l *ListFlags) Options(namespace string, extra map[string]string) []client.ListOption {
	sel := l.selector
	if sel == nil {
		sel = labels.Everything()
	}
	for k, v := range extra {
		req, err := labels.NewRequirement(k, "=", []string{v})
		if err == nil {
			sel = sel.Add(*req)
		}
	}
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}}
	if !l.AllNamespaces {
		opts = append(opts, client.InNamespace(namespace))
	}
	return opts
}

// Source returns the watch source of the list (see Options).
func (l *ListFlags) Source(list client.ObjectList, obj client.Object, namespace string, extra map[string]string) WatchSource {
	var lo client.ListOptions
	lo.ApplyOptions(l.Options(namespace, extra))
	return WatchSource{List: list, Object: obj, Namespace: lo.Namespace, Labels: lo.LabelSelector}
}

// Scope describes where a list looked, for "nothing found" messages.
func (l *ListFlags) Scope(namespace string) string {
	where := "in namespace " + namespace
	if l.AllNamespaces {
		where = "in any namespace"
	}
	if l.Selector != "" {
		where = "matching " + l.Selector + " " + where
	}
	return where
}

// TableOptions choose the optional columns of a list's table.
type TableOptions struct {
	// AllNamespaces puts a NAMESPACE column first (-A).
	AllNamespaces bool
	// Wide adds the table's wide columns (-o wide).
	Wide bool
}

// NewTable returns a table with headers and the optional columns: NAMESPACE
// first with AllNamespaces, wide last with Wide.
func (o TableOptions) NewTable(headers, wide []string) *Table {
	if o.AllNamespaces {
		headers = append([]string{"NAMESPACE"}, headers...)
	}
	if o.Wide {
		headers = append(headers, wide...)
	}
	return NewTable(headers...)
}

// AddRow adds a row of a table made by NewTable: namespace first with
// AllNamespaces, then cells, then what wide returns with Wide (only then
// called).
func (o TableOptions) AddRow(t *Table, namespace string, cells []string, wide func() []string) {
	if o.AllNamespaces {
		cells = append([]string{namespace}, cells...)
	}
	if o.Wide {
		cells = append(cells, wide()...)
	}
	t.AddRow(cells...)
}

// TableOptions returns the optional columns -A and -o wide ask for.
func (l *ListFlags) TableOptions(o *OutputFlags) TableOptions {
	return TableOptions{AllNamespaces: l.AllNamespaces, Wide: o.IsWide()}
}

// ListView is how a list command shows its objects of type T: sorted by
// Sort, as documents with -o json|yaml|name, else as the rows of Table.
type ListView[T any, PT interface {
	*T
	client.Object
}] struct {
	// Output is -o.
	Output *OutputFlags
	// List is -l, -A, --no-headers and -w.
	List *ListFlags
	// Sort orders the items in place.
	Sort func(items []T)
	// Table makes the table of the items.
	Table func(items []T, now time.Time, opts TableOptions) *Table
}

// Print shows items, the items of list: list itself with -o json|yaml|name,
// else their table. With a table to show and no items it writes nothing and
// returns false, for the caller to say on stderr what it found nothing of.
func (v ListView[T, PT]) Print(f *Factory, c *Clients, list runtime.Object, items []T) (bool, error) {
	v.Sort(items)
	if err := sortItems[T, PT](v.List, items); err != nil {
		return false, err
	}
	s := f.Streams
	if isCustomColumns(v.Output.Format) {
		if len(items) == 0 {
			return false, nil
		}
		return true, PrintCustomColumns(s.Out, v.Output.Format, list, c.Scheme, v.List.NoHeaders)
	}
	if !v.Output.IsTable() {
		return len(items) > 0, PrintObject(s.Out, v.Output.Format, list, c.Scheme)
	}
	if len(items) == 0 {
		return false, nil
	}
	t := v.table(items, f.Now())
	t.NoHeaders = v.List.NoHeaders
	return true, t.RenderTo(s)
}

// Watch prints the objects of src, then all of them again each time one
// changes, until ctx ends: as documents with -o, else as table rows, the
// header line the first time only.
func (v ListView[T, PT]) Watch(ctx context.Context, f *Factory, c *Clients, src WatchSource) error {
	s := f.Streams
	return f.WatchList(ctx, c.Client, src, func(objs []client.Object, first bool) error {
		items := Items[T, PT](objs)
		v.Sort(items)
		if err := sortItems[T, PT](v.List, items); err != nil {
			return err
		}
		if isCustomColumns(v.Output.Format) {
			objs := make([]runtime.Object, len(items))
			for i := range items {
				objs[i] = PT(&items[i])
			}
			return printCustomColumns(s.Out, v.Output.Format, objs, c.Scheme, v.List.NoHeaders || !first)
		}
		if !v.Output.IsTable() {
			return PrintItems[T, PT](s.Out, v.Output.Format, items, c.Scheme)
		}
		t := v.table(items, f.Now())
		t.NoHeaders = v.List.NoHeaders || !first
		return t.RenderTo(s)
	})
}

// table makes the table of items, with LABELS last with --show-labels.
func (v ListView[T, PT]) table(items []T, now time.Time) *Table {
	t := v.Table(items, now, v.List.TableOptions(v.Output))
	objs := make([]client.Object, len(items))
	for i := range items {
		objs[i] = PT(&items[i])
	}
	v.List.AddLabelsColumn(t, objs...)
	return t
}
