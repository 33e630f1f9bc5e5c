package cmdutil

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// NoArgs rejects positional arguments with a usage error.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return UsageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), strings.Join(args, " "))
	}
	return nil
}

// ExactArgs requires exactly the named positional arguments ("NAME").
func ExactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return UsageErrorf("%s needs %s: %s %s", cmd.CommandPath(), strings.Join(names[len(args):], " and "),
				cmd.CommandPath(), strings.Join(names, " "))
		case len(args) > len(names):
			return UsageErrorf("%s takes %s, got %d arguments (%q)", cmd.CommandPath(), strings.Join(names, " "),
				len(args), strings.Join(args, " "))
		}
		return nil
	}
}

// MaximumArgs allows up to the named optional positional arguments.
func MaximumArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > len(names) {
			return UsageErrorf("%s takes at most %s, got %d arguments (%q)", cmd.CommandPath(), strings.Join(names, " "),
				len(args), strings.Join(args, " "))
		}
		return nil
	}
}

// CompleteWorkloadNames completes the first argument with the names of
// the workloads in the namespace. It never prompts and stays silent on
// errors.
func CompleteWorkloadNames(f *Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := f.connect()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		var list computev1alpha.WorkloadList
		if err := c.Client.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, w := range list.Items {
			if strings.HasPrefix(w.Name, toComplete) {
				out = append(out, w.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// UnknownCommand is the Args of a command whose positional arguments can
// only be subcommands: anything else is an unknown command, with
// suggestions.
func UnknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := "unknown command " + strconvQuote(args[0]) + " for " + strconvQuote(cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return UsageErrorf("%s", msg)
}

// strconvQuote quotes s for messages.
func strconvQuote(s string) string { return `"` + s + `"` }

// Runner is the anatomy of every command: Complete fills the options
// from the arguments and flags, Validate checks them without a server,
// Run does the work. Options that also implement Resolver (by embedding
// ProjectRef or WorkloadRef) are resolved between Validate and Run.
type Runner interface {
	// Complete fills the options from the arguments and flags.
	Complete(cmd *cobra.Command, args []string) error
	// Validate checks the options; it never talks to a server.
	Validate() error
	// Run does the work.
	Run(ctx context.Context) error
}

// RunE returns the cobra RunE of r: Complete, Validate, Resolve (when r
// is a Resolver), Run.
func RunE(r Runner) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := r.Complete(cmd, args); err != nil {
			return err
		}
		if err := r.Validate(); err != nil {
			return err
		}
		if rr, ok := r.(Resolver); ok {
			if err := rr.Resolve(cmd.Context()); err != nil {
				return err
			}
		}
		return r.Run(cmd.Context())
	}
}

// Parse does what cobra and RunE do before Resolve and Run: parse args
// into cmd's flags, check the positional arguments, Complete and Validate
// r. Tests of flag handling use it; it never talks to a server.
func Parse(cmd *cobra.Command, r Runner, args []string) error {
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageErrorf("%v", err) })
	if err := cmd.ParseFlags(args); err != nil {
		return UsageErrorf("%v", err)
	}
	rest := cmd.Flags().Args()
	if err := cmd.ValidateArgs(rest); err != nil {
		return err
	}
	if err := r.Complete(cmd, rest); err != nil {
		return err
	}
	return r.Validate()
}

// Command finishes cmd for o: RunE runs o and -o is bound to output.
func Command(cmd *cobra.Command, o Runner, output *OutputFlags) *cobra.Command {
	cmd.RunE = RunE(o)
	output.AddFlags(cmd)
	return cmd
}

// CommandOf returns the command of a constructor that also returns the
// options it fills, for the tests that parse into them: a package's
// NewCommand(f) is CommandOf(newCommand(f)).
func CommandOf[O Runner](cmd *cobra.Command, _ O) *cobra.Command { return cmd }

// WorkloadCommand finishes cmd, a command on the workload named by its one
// argument, for o: NAME is required and completed with the namespace's
// workloads, and the rest is Command's.
func WorkloadCommand(f *Factory, cmd *cobra.Command, o Runner, output *OutputFlags) *cobra.Command {
	cmd.Args = ExactArgs("NAME")
	cmd.ValidArgsFunction = CompleteWorkloadNames(f)
	return Command(cmd, o, output)
}
