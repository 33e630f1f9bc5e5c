package cmdutil

import (
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ListFlags are kubectl's list flags: -l/--selector, -A/--all-namespaces
// and --no-headers.
type ListFlags struct {
	// Selector is -l/--selector, a label selector ("app=web,tier!=db").
	Selector string
	// AllNamespaces is -A/--all-namespaces.
	AllNamespaces bool
	// NoHeaders is --no-headers.
	NoHeaders bool
	// Watch is -w/--watch: after the list, print what changes until Ctrl-C.
	Watch bool

	selector labels.Selector
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
}

// Validate parses the selector.
func (l *ListFlags) Validate() error {
	sel, err := labels.Parse(l.Selector)
	if err != nil {
		return UsageErrorf("-l %q: %v", l.Selector, err)
	}
	l.selector = sel
	return nil
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
