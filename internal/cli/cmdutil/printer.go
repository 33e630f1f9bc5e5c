package cmdutil

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"
)

// Output formats every read command supports.
const (
	// OutputTable is the human table (the default).
	OutputTable = "table"
	// OutputJSON is JSON: API objects as the API serves them, views as
	// documented structures.
	OutputJSON = "json"
	// OutputYAML is the same document as YAML.
	OutputYAML = "yaml"
)

// OutputFlags is the -o/--output flag.
type OutputFlags struct {
	// Format is table, json or yaml.
	Format string
}

// NewOutputFlags returns the flag with the table default.
func NewOutputFlags() *OutputFlags {
	return &OutputFlags{Format: OutputTable}
}

// AddFlags binds -o/--output to cmd.
func (o *OutputFlags) AddFlags(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.Format, "output", "o", o.Format, "Output format: table, json or yaml.")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{OutputTable, OutputJSON, OutputYAML}, cobra.ShellCompDirectiveNoFileComp
	})
}

// Validate rejects an unknown format.
func (o *OutputFlags) Validate() error {
	switch o.Format {
	case OutputTable, OutputJSON, OutputYAML:
		return nil
	case "wide":
		return UsageErrorf("-o wide is not supported: the table already shows every column; use -o json for everything")
	}
	return UsageErrorf("unknown output format %q: use table, json or yaml", o.Format)
}

// IsTable reports whether the human table was asked for.
func (o *OutputFlags) IsTable() bool { return o.Format == OutputTable }

// PrintObject writes an API object (or list) as JSON or YAML through the
// cli-runtime printers, with its apiVersion and kind set from scheme and
// managed fields left out, as kubectl shows them.
func PrintObject(w io.Writer, format string, obj runtime.Object, scheme *runtime.Scheme) error {
	obj = obj.DeepCopyObject()
	if err := setKinds(obj, scheme); err != nil {
		return err
	}
	var p printers.ResourcePrinter
	switch format {
	case OutputJSON:
		p = &printers.JSONPrinter{}
	case OutputYAML:
		p = &printers.YAMLPrinter{}
	default:
		return fmt.Errorf("PrintObject: unsupported format %q", format)
	}
	return p.PrintObj(obj, w)
}

// setKinds sets the GroupVersionKind of obj and, for a list, of every
// item, and clears managed fields.
func setKinds(obj runtime.Object, scheme *runtime.Scheme) error {
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return err
		}
		for _, item := range items {
			if err := setKinds(item, scheme); err != nil {
				return err
			}
		}
		if err := meta.SetList(obj, items); err != nil {
			return err
		}
	} else if acc, err := meta.Accessor(obj); err == nil {
		acc.SetManagedFields(nil)
	}
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil {
		return fmt.Errorf("cannot print %T: %w", obj, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	return nil
}

// ViewAPIVersion is the apiVersion of the documents commands print for
// computed views (status, quota, rollout history) with -o json|yaml.
const ViewAPIVersion = "cli.compute.datumapis.com/v1alpha1"

// PrintView writes a computed view as indented JSON or as YAML.
func PrintView(w io.Writer, format string, v any) error {
	data, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return fmt.Errorf("failed to encode output: %w", err)
	}
	switch format {
	case OutputJSON:
		_, err = fmt.Fprintf(w, "%s\n", data)
	case OutputYAML:
		var out []byte
		if out, err = yaml.JSONToYAML(data); err == nil {
			_, err = w.Write(out)
		}
	default:
		err = fmt.Errorf("PrintView: unsupported format %q", format)
	}
	return err
}

// Human returns where a command writes what people read, and whether it
// is a terminal: standard output with the table format; standard error
// when standard output carries a -o json|yaml document.
func (f *Factory) Human(o *OutputFlags) (io.Writer, bool) {
	if o == nil || o.IsTable() {
		return f.Streams.Out, f.Streams.OutTerminal
	}
	return f.Streams.ErrOut, false
}

// PrintResult prints obj, the result of a command that changed something,
// when -o asked for a document; with the table format it prints nothing
// (the command already said what it did).
func (f *Factory) PrintResult(o *OutputFlags, obj runtime.Object, scheme *runtime.Scheme) error {
	if o == nil || o.IsTable() {
		return nil
	}
	return PrintObject(f.Streams.Out, o.Format, obj, scheme)
}
