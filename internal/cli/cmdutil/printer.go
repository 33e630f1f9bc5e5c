package cmdutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	// OutputName prints kind/name of each API object, as kubectl does.
	OutputName = "name"
	// OutputWide is the table with more columns, on lists that have them.
	OutputWide = "wide"
)

// templateFormats are the kubectl template formats, given as
// -o FORMAT=TEMPLATE.
var templateFormats = []string{"jsonpath", "jsonpath-as-json", "jsonpath-file", "go-template", "go-template-file"}

// OutputFlags is the -o/--output flag.
type OutputFlags struct {
	// Format is table, json, yaml, name (API objects only), or a template:
	// jsonpath=…, jsonpath-as-json=…, go-template=… (or their -file forms),
	// or custom-columns=HEADER:FIELD,… (API objects only).
	Format string
	// Objects says the command prints API objects, which -o name needs;
	// commands that print computed views leave it false.
	Objects bool
	// Wide says the command's table has -o wide columns.
	Wide bool
}

// NewOutputFlags returns the flag with the table default, for commands
// that print computed views.
func NewOutputFlags() *OutputFlags {
	return &OutputFlags{Format: OutputTable}
}

// NewObjectOutputFlags returns the flag with the table default, for
// commands that print API objects (-o name works too).
func NewObjectOutputFlags() *OutputFlags {
	return &OutputFlags{Format: OutputTable, Objects: true}
}

// formats lists the formats of o, for help and completion.
func (o *OutputFlags) formats() []string {
	out := []string{OutputTable, OutputJSON, OutputYAML}
	if o.Wide {
		out = append(out, OutputWide)
	}
	if o.Objects {
		out = append(out, OutputName, customColumnsPrefix)
	}
	for _, t := range templateFormats {
		out = append(out, t+"=")
	}
	return out
}

// AddFlags binds -o/--output to cmd.
func (o *OutputFlags) AddFlags(cmd *cobra.Command) {
	more := ""
	if o.Wide {
		more += ", wide"
	}
	if o.Objects {
		more += ", name, custom-columns=HEADER:FIELD,..."
	}
	cmd.Flags().StringVarP(&o.Format, "output", "o", o.Format,
		"Output format: table, json, yaml"+more+", jsonpath=TEMPLATE, jsonpath-as-json=TEMPLATE or go-template=TEMPLATE.")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return o.formats(), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
}

// Validate rejects an unknown format or a template that does not parse.
func (o *OutputFlags) Validate() error {
	switch {
	case o.Format == OutputTable, o.Format == OutputJSON, o.Format == OutputYAML:
		return nil
	case o.Format == OutputName && o.Objects:
		return nil
	case o.Format == OutputName:
		return UsageErrorf("-o name prints API objects; this command prints a computed view: use json, yaml, jsonpath= or go-template=")
	case o.Format == OutputWide && o.Wide:
		return nil
	case isCustomColumns(o.Format) && o.Objects:
		if _, err := ParseCustomColumns(strings.TrimPrefix(o.Format, customColumnsPrefix)); err != nil {
			return UsageErrorf("-o custom-columns: %v", err)
		}
		return nil
	case isCustomColumns(o.Format):
		return UsageErrorf("-o custom-columns prints API objects; this command prints a computed view: use json, yaml, jsonpath= or go-template=")
	case o.Format == OutputWide:
		return UsageErrorf("-o wide is only for the workloads and instances lists: this table already shows every column; use -o json for everything")
	case isTemplate(o.Format):
		if _, err := templatePrinter(o.Format); err != nil {
			return UsageErrorf("-o %s: %v", o.Format, err)
		}
		return nil
	}
	return UsageErrorf("unknown output format %q: use %s", o.Format, strings.Join(o.formats(), ", "))
}

// isTemplate reports whether format is FORMAT=TEMPLATE of a template format.
func isTemplate(format string) bool {
	name, _, ok := strings.Cut(format, "=")
	return ok && slices.Contains(templateFormats, name)
}

// templatePrinter returns the cli-runtime printer of a template format,
// with kubectl's conventions: missing keys print nothing, and a jsonpath
// without braces gets them ("{.metadata.name}" and ".metadata.name" are
// the same).
func templatePrinter(format string) (printers.ResourcePrinter, error) {
	name, tmpl, _ := strings.Cut(format, "=")
	if strings.HasSuffix(name, "-file") {
		data, err := os.ReadFile(tmpl)
		if err != nil {
			return nil, fmt.Errorf("cannot read the template: %w", err)
		}
		tmpl = string(data)
	}
	if tmpl == "" {
		return nil, errors.New("the template is empty")
	}
	if strings.HasPrefix(name, "go-template") {
		return printers.NewGoTemplatePrinter([]byte(tmpl))
	}
	if !strings.HasPrefix(strings.TrimSpace(tmpl), "{") {
		tmpl = "{" + strings.TrimSpace(tmpl) + "}"
	}
	p, err := printers.NewJSONPathPrinter(tmpl)
	if err != nil {
		return nil, err
	}
	p.AllowMissingKeys(true)
	if name == "jsonpath-as-json" {
		p.EnableJSONOutput(true)
	}
	return p, nil
}

// IsTable reports whether the human table (or its wide form) was asked
// for.
func (o *OutputFlags) IsTable() bool { return o.Format == OutputTable || o.Format == OutputWide }

// IsWide reports whether -o wide was asked for.
func (o *OutputFlags) IsWide() bool { return o.Format == OutputWide }

// PrintObject writes an API object (or list) as JSON or YAML through the
// cli-runtime printers, with its apiVersion and kind set from scheme and
// managed fields left out, as kubectl shows them.
func PrintObject(w io.Writer, format string, obj runtime.Object, scheme *runtime.Scheme) error {
	obj = obj.DeepCopyObject()
	if err := setKinds(obj, scheme); err != nil {
		return err
	}
	var p printers.ResourcePrinter
	switch {
	case format == OutputJSON:
		p = &printers.JSONPrinter{}
	case format == OutputYAML:
		p = &printers.YAMLPrinter{}
	case format == OutputName:
		// The name printer takes one object at a time.
		if meta.IsListType(obj) {
			items, err := meta.ExtractList(obj)
			if err != nil {
				return err
			}
			for _, item := range items {
				if err := (&printers.NamePrinter{}).PrintObj(item, w); err != nil {
					return err
				}
			}
			return nil
		}
		p = &printers.NamePrinter{}
	case isTemplate(format):
		var err error
		if p, err = templatePrinter(format); err != nil {
			return UsageErrorf("-o %s: %v", format, err)
		}
	case isCustomColumns(format):
		return PrintCustomColumns(w, format, obj, scheme, false)
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

// PrintView writes a computed view as indented JSON, as YAML, or through
// a jsonpath or go-template template.
func PrintView(w io.Writer, format string, v any) error {
	data, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return fmt.Errorf("failed to encode output: %w", err)
	}
	switch {
	case isTemplate(format):
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("failed to encode output: %w", err)
		}
		p, err := templatePrinter(format)
		if err != nil {
			return UsageErrorf("-o %s: %v", format, err)
		}
		return p.PrintObj(&unstructured.Unstructured{Object: doc}, w)
	case format == OutputJSON:
		_, err = fmt.Fprintf(w, "%s\n", data)
	case format == OutputYAML:
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

// Items returns, as values, the objects of objs that are of type T (a
// watch hands its sources' objects over as client.Objects).
func Items[T any, PT interface {
	*T
	client.Object
}](objs []client.Object) []T {
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		if p, ok := obj.(PT); ok {
			out = append(out, *p)
		}
	}
	return out
}

// PrintItems prints every item in format, one document each (the
// non-table outputs of a list).
func PrintItems[T any, PT interface {
	*T
	runtime.Object
}](w io.Writer, format string, items []T, scheme *runtime.Scheme) error {
	for i := range items {
		if err := PrintObject(w, format, PT(&items[i]), scheme); err != nil {
			return err
		}
	}
	return nil
}
