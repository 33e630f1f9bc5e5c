// Package version implements `datumctl compute version` and the datumctl
// plugin manifest (--plugin-manifest).
package version

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/citycells/compute/internal/cli/cmdutil"
)

// Plugin manifest constants.
const (
	// PluginName is the datumctl subcommand the plugin provides.
	PluginName = "compute"
	// PluginDescription describes the plugin in `datumctl plugin list`.
	// The name is Datum's official compute plugin's, on purpose (a
	// compatible implementation that replaces it: docs/cli.md,
	// "Installing"); the description says which one is installed.
	PluginDescription = "citycells/compute: deploy and manage containerized workloads across Datum Cloud cities " +
		"(a compatible implementation; replaces Datum's compute plugin)"
	// MinDatumctlVersion is the first datumctl that dispatches to plugins.
	// A plugin found on PATH (not installed with `datumctl plugin install`)
	// gets its arguments unchanged only from datumctl v0.17.1 on, and must
	// be trusted first with `datumctl plugin trust compute` (docs/cli.md).
	MinDatumctlVersion = "v0.15.0"
)

// Manifest is the JSON document datumctl reads from --plugin-manifest.
type Manifest struct {
	Name               string `json:"name"`
	Version            string `json:"version"`
	Description        string `json:"description"`
	MinDatumctlVersion string `json:"min_datumctl_version"`
	APIVersion         int    `json:"api_version"`
	MinAPIVersion      int    `json:"min_api_version"`
}

// NewManifest returns the manifest of a build.
func NewManifest(b cmdutil.BuildInfo) Manifest {
	return Manifest{
		Name:               PluginName,
		Version:            b.Version,
		Description:        PluginDescription,
		MinDatumctlVersion: MinDatumctlVersion,
		APIVersion:         cmdutil.PluginAPIVersion,
		MinAPIVersion:      cmdutil.PluginAPIVersion,
	}
}

// WriteManifest writes the manifest of b as indented JSON.
func WriteManifest(w io.Writer, b cmdutil.BuildInfo) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(NewManifest(b))
}

// Info is what `version -o json` prints.
type Info struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	cmdutil.BuildInfo
	// GoVersion is the Go toolchain the binary was built with.
	GoVersion string `json:"goVersion"`
	// PluginAPIVersion is the datumctl plugin contract implemented.
	PluginAPIVersion int `json:"pluginAPIVersion"`
}

// Options are the options of the version command.
type Options struct {
	// Factory gives streams and build information.
	Factory *cmdutil.Factory
	// Output is -o.
	Output *cmdutil.OutputFlags
}

// NewCommand returns the version command.
func NewCommand(f *cmdutil.Factory) *cobra.Command { return cmdutil.CommandOf(newCommand(f)) }

// newCommand returns the command and the options it fills.
func newCommand(f *cmdutil.Factory) (*cobra.Command, *Options) {
	o := &Options{Factory: f, Output: cmdutil.NewOutputFlags()}
	cmd := cmdutil.Command(&cobra.Command{
		Use:   "version",
		Short: "Print the version of datumctl-compute",
		Args:  cmdutil.NoArgs,
	}, o, o.Output)
	return cmd, o
}

// Complete has nothing to fill in.
func (o *Options) Complete(*cobra.Command, []string) error { return nil }

// Validate checks the flags.
func (o *Options) Validate() error { return o.Output.Validate() }

// Run prints the version. It never talks to a server.
func (o *Options) Run(context.Context) error {
	info := Info{APIVersion: cmdutil.ViewAPIVersion, Kind: "Version", BuildInfo: o.Factory.Build,
		GoVersion: runtime.Version(), PluginAPIVersion: cmdutil.PluginAPIVersion}
	if !o.Output.IsTable() {
		return cmdutil.PrintView(o.Factory.Streams.Out, o.Output.Format, info)
	}
	commit := ""
	if info.Commit != "" {
		commit = ", commit " + info.Commit
	}
	_, err := fmt.Fprintf(o.Factory.Streams.Out, "datumctl-compute %s (%s%s, plugin API %d)\n",
		info.Version, info.GoVersion, commit, info.PluginAPIVersion)
	return err
}
