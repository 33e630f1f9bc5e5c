// Package cli assembles datumctl-compute: the root command, its command
// tree, and Main, which runs it and maps the outcome to an exit code.
// The commands live in one package per noun (internal/cli/<noun>); the
// shared machinery in internal/cli/cmdutil.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/deploy"
	"github.com/citycells/compute/internal/cli/destroy"
	"github.com/citycells/compute/internal/cli/events"
	"github.com/citycells/compute/internal/cli/exec"
	"github.com/citycells/compute/internal/cli/instances"
	"github.com/citycells/compute/internal/cli/instancetypes"
	"github.com/citycells/compute/internal/cli/logs"
	"github.com/citycells/compute/internal/cli/quotausage"
	"github.com/citycells/compute/internal/cli/restart"
	"github.com/citycells/compute/internal/cli/rollout"
	"github.com/citycells/compute/internal/cli/scale"
	"github.com/citycells/compute/internal/cli/statusview"
	"github.com/citycells/compute/internal/cli/suspend"
	"github.com/citycells/compute/internal/cli/version"
	"github.com/citycells/compute/internal/cli/workloads"
)

// PluginName is how datumctl invokes the plugin.
const PluginName = "datumctl compute"

// StandaloneName is the binary's own name.
const StandaloneName = "datumctl-compute"

// intro is the root command's description.
const intro = "datumctl compute deploys containers to cities (DFW, LHR, ...) and lets you watch, scale, restart,\n" +
	"roll back and destroy them.\n\n" +
	"Run as `datumctl compute`, it acts in the active Datum project (DATUM_PROJECT, or --project) and\n" +
	"gets a token from datumctl when it needs one. Standalone, give it --kubeconfig (and --context,\n" +
	"--namespace) — for example the kubeconfig `compute-local up` prints."

// exitCodesHelp documents the exit codes in the root help.
func exitCodesHelp() string {
	var b strings.Builder
	b.WriteString("Exit codes:")
	for _, e := range cmdutil.ExitCodes() {
		fmt.Fprintf(&b, "\n  %-4d %s", e.Code, e.Meaning)
	}
	return b.String()
}

// usageTemplate is cobra's without the global flags, as kubectl's: each
// command lists its own flags and points at `options` for the rest.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .LocalNonPersistentFlags.HasAvailableFlags}}

Flags:
{{.LocalNonPersistentFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}

{{if .HasAvailableSubCommands}}Use "{{.CommandPath}} [command] --help" for more information about a command.
{{end}}Use "{{.Root.CommandPath}} options" for a list of global command-line options (applies to all commands).
`

// newOptionsCommand returns `options`, which lists the global flags.
func newOptionsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "options",
		Short: "List the flags every command accepts",
		Long: "List the flags every command accepts: kubectl's connection flags (--kubeconfig, --context, -n,\n" +
			"--server, --as, ...), --project and --yes. Each command's --help shows only its own flags.",
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "The following options can be passed to any command:\n\n%s",
				cmd.Root().PersistentFlags().FlagUsages())
			return err
		},
	}
}

// NewRootCommand returns the command tree bound to f.
func NewRootCommand(f *cmdutil.Factory) *cobra.Command {
	var manifest bool
	root := &cobra.Command{
		Use:           StandaloneName,
		Short:         "Deploy and manage workloads across Datum Cloud cities",
		Long:          intro + "\n\n" + exitCodesHelp(),
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: f.Name},
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cmdutil.UnknownCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if manifest {
				return version.WriteManifest(f.Streams.Out, f.Build)
			}
			return cmd.Help()
		},
	}
	root.Flags().BoolVar(&manifest, "plugin-manifest", false, "Print the datumctl plugin manifest as JSON and exit.")
	f.AddGlobalFlags(root)
	root.SetUsageTemplate(usageTemplate)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return cmdutil.UsageErrorf("%v", err)
	})

	restartCmd := restart.NewCommand(f)
	root.AddCommand(
		deploy.NewCommand(f),
		workloads.NewCommand(f),
		statusview.NewCommand(f),
		instances.NewCommand(f),
		logs.NewCommand(f),
		exec.NewCommand(f),
		events.NewCommand(f),
		scale.NewCommand(f),
		restartCmd,
		suspend.NewSuspendCommand(f),
		suspend.NewResumeCommand(f),
		rollout.NewCommand(f, restart.NewCommand(f)),
		destroy.NewCommand(f),
		quotausage.NewCommand(f),
		instancetypes.NewCommand(f),
		version.NewCommand(f),
		newOptionsCommand(),
	)
	// cobra's completion command captures the output stream when it is
	// created: set the streams first.
	if f.Streams.Out != nil {
		root.SetIn(f.Streams.In)
		root.SetOut(f.Streams.Out)
		root.SetErr(f.Streams.ErrOut)
	}
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Short = "Print a shell completion script (bash, zsh, fish or powershell)"
		c.Long = "Print a completion script for bash, zsh, fish or PowerShell. For example:\n\n" +
			"  source <(datumctl-compute completion bash)\n" +
			"  datumctl-compute completion zsh > \"${fpath[1]}/_datumctl-compute\"\n" +
			"  datumctl-compute completion fish > ~/.config/fish/completions/datumctl-compute.fish\n" +
			"  datumctl-compute completion powershell | Out-String | Invoke-Expression\n\n" +
			"Run `datumctl-compute completion <shell> --help` for details. Under datumctl, completion is datumctl's."
	}
	return root
}

// ProgramName returns how users invoked the binary, from argv[0]: datumctl
// runs a managed install as ".../plugins/compute", and asks it for --help
// without the DATUM_* variables, so the name is all that says "under
// datumctl" then. Any other name returns "" and Main decides from the
// environment.
func ProgramName(argv0 string) string {
	base := strings.TrimSuffix(filepath.Base(filepath.ToSlash(argv0)), ".exe")
	if i := strings.LastIndexAny(base, `\`); i >= 0 {
		base = base[i+1:]
	}
	if base == version.PluginName {
		return PluginName
	}
	return ""
}

// Main runs the command line args with f and returns the exit code:
// errors are printed to f's error stream with their hints.
func Main(ctx context.Context, args []string, f *cmdutil.Factory) int {
	if f.Name == "" {
		f.Name = StandaloneName
		if getenv(f, cmdutil.EnvAPIHost) != "" || getenv(f, cmdutil.EnvPluginAPIVersion) != "" {
			f.Name = PluginName
		}
	}
	// datumctl asks for the manifest before anything else; answer even if
	// the rest of the command line would not parse.
	if slices.Contains(args, "--plugin-manifest") {
		if err := version.WriteManifest(f.Streams.Out, f.Build); err != nil {
			cmdutil.PrintError(f.Streams.ErrOut, err)
			return cmdutil.ExitFailure
		}
		return cmdutil.ExitOK
	}
	if v := getenv(f, cmdutil.EnvPluginAPIVersion); v != "" && v != strconv.Itoa(cmdutil.PluginAPIVersion) {
		_, _ = fmt.Fprintf(f.Streams.ErrOut, "Warning: datumctl speaks plugin API %s; this plugin speaks %d. Upgrade the older of the two if something fails.\n",
			v, cmdutil.PluginAPIVersion)
	}
	root := NewRootCommand(f)
	root.SetArgs(args)
	ran := false
	root.PersistentPreRun = func(*cobra.Command, []string) { ran = true }
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return cmdutil.ExitOK
	}
	err = f.ExplainUnreachable(err)
	var ee *cmdutil.ExitError
	if !ran && !errors.As(err, &ee) {
		// cobra refused the command line before running anything: an
		// unknown command or flag.
		err = cmdutil.UsageErrorf("%v", err)
	}
	cmdutil.PrintError(f.Streams.ErrOut, err)
	if cmdutil.ExitCode(err) == cmdutil.ExitUsage && cmd != nil {
		_, _ = fmt.Fprintf(f.Streams.ErrOut, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return cmdutil.ExitCode(err)
}

// getenv reads the factory's environment; nothing without one.
func getenv(f *cmdutil.Factory, key string) string {
	if f.Getenv == nil {
		return ""
	}
	return f.Getenv(key)
}

// SignalContext returns a context cancelled with cmdutil.ErrInterrupted
// on the first SIGINT or SIGTERM; a second signal kills the process the
// default way.
func SignalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cancel(cmdutil.ErrInterrupted)
			signal.Stop(ch)
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		signal.Stop(ch)
		cancel(context.Canceled)
	}
}
