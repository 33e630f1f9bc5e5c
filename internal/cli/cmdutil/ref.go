package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Resolver is implemented by options that read what Run needs from the
// server: RunE calls Resolve after Validate, so the command line is
// checked before anything talks to the server, and Run only uses the
// options. Options resolve by embedding ProjectRef or WorkloadRef.
type Resolver interface {
	// Resolve connects and reads what Run needs.
	Resolve(ctx context.Context) error
}

// ProjectRef is the project a command acts in: the Factory, and, once
// resolved, the clients to the project with compute enabled for it.
// Embed it in a command's options.
type ProjectRef struct {
	// Factory gives streams, clock and clients.
	Factory *Factory
	// Clients talk to the project; set by Resolve. Clients.Namespace is
	// the namespace the command acts in.
	Clients *Clients
}

// ProjectOptions are what the commands acting in a project share: the
// project and -o. Embed them in a command's options.
type ProjectOptions struct {
	// ProjectRef is the project, resolved before Run.
	ProjectRef
	// Output is -o.
	Output *OutputFlags
}

// NewProjectOptions returns the options of a command built with f,
// printing with output.
func NewProjectOptions(f *Factory, output *OutputFlags) ProjectOptions {
	return ProjectOptions{ProjectRef: ProjectRef{Factory: f}, Output: output}
}

// Validate checks -o. Options with nothing else to check use it as their
// Validate.
func (p *ProjectOptions) Validate() error { return p.ValidateWith() }

// ValidateWith returns the first of checks that is not nil (the results
// of a command's own checks, in their order), then checks -o.
func (p *ProjectOptions) ValidateWith(checks ...error) error {
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return p.Output.Validate()
}

// Resolve connects to the project and makes sure compute is enabled for
// it (EnsureEnabled): the first step of every command that uses the
// project.
func (p *ProjectRef) Resolve(ctx context.Context) error {
	c, err := p.Factory.Clients()
	if err != nil {
		return err
	}
	if err := p.Factory.EnsureEnabled(ctx, c); err != nil {
		return err
	}
	p.Clients = c
	return nil
}

// WorkloadRef is the workload a command acts on, named by its NAME
// argument: Complete takes the name, Resolve connects and reads the
// Workload. Embed it in a command's options.
type WorkloadRef struct {
	ProjectRef
	// Name is the workload.
	Name string
	// Workload is the workload as read by Resolve.
	Workload *computev1alpha.Workload
}

// NewWorkloadRef returns the reference of a command built with f.
func NewWorkloadRef(f *Factory) WorkloadRef {
	return WorkloadRef{ProjectRef: ProjectRef{Factory: f}}
}

// Complete takes the workload name from the arguments (ExactArgs("NAME")
// checked there is one). Options that need nothing else completed use it
// as their Complete.
func (r *WorkloadRef) Complete(_ *cobra.Command, args []string) error {
	r.Name = args[0]
	return nil
}

// Resolve connects to the project (ProjectRef.Resolve) and reads the
// workload; a missing one is an error that says how to list workloads.
func (r *WorkloadRef) Resolve(ctx context.Context) error {
	if err := r.ProjectRef.Resolve(ctx); err != nil {
		return err
	}
	w, err := r.Factory.GetWorkload(ctx, r.Clients, r.Name)
	if err != nil {
		return err
	}
	r.Workload = w
	return nil
}

// WorkloadWaitOptions are what the commands on one workload that may wait
// for it share: the workload (NAME), -o, and --wait or --watch with
// --timeout. Embed them in a command's options.
type WorkloadWaitOptions struct {
	// WorkloadRef is the workload, resolved before Run.
	WorkloadRef
	// Output is -o.
	Output *OutputFlags
	// WaitFlags are --wait (or only --timeout, when --watch or the
	// command itself says whether to wait) and --timeout.
	WaitFlags *WaitFlags
}

// NewWorkloadWaitOptions returns the options of a command built with f,
// printing with output, waiting at most timeout unless --timeout says
// otherwise.
func NewWorkloadWaitOptions(f *Factory, output *OutputFlags, timeout time.Duration) WorkloadWaitOptions {
	return WorkloadWaitOptions{WorkloadRef: NewWorkloadRef(f), Output: output, WaitFlags: NewWaitFlags(timeout)}
}

// Validate checks --timeout and -o. Options with nothing else to check
// use it as their Validate.
func (o *WorkloadWaitOptions) Validate() error {
	if err := o.WaitFlags.Validate(); err != nil {
		return err
	}
	return o.Output.Validate()
}

// WorkloadWatchOptions are what the commands that read a workload with
// its deployments and instances themselves, once or with --watch, share
// (status, rollout status): WorkloadWaitOptions, of whose WaitFlags only
// --timeout is bound, and --watch. Resolve connects but leaves reading the
// workload to the command.
type WorkloadWatchOptions struct {
	WorkloadWaitOptions
	// Watch is --watch: keep looking (how long is --timeout).
	Watch bool
}

// AddWatchFlags binds --watch (-w), described by usage and defaulting to
// Watch, and --timeout, described by timeoutUsage.
func (o *WorkloadWatchOptions) AddWatchFlags(cmd *cobra.Command, usage, timeoutUsage string) {
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", o.Watch, usage)
	o.WaitFlags.AddTimeoutFlag(cmd, timeoutUsage)
}

// Resolve connects to the project (ProjectRef.Resolve); the command reads
// the workload.
func (o *WorkloadWatchOptions) Resolve(ctx context.Context) error { return o.ProjectRef.Resolve(ctx) }

// PrintCurrent prints the workload as it is now on the server when -o
// asks for a document (the result of a command that changed it); with the
// table format it prints nothing.
func (r *WorkloadRef) PrintCurrent(ctx context.Context, o *OutputFlags) error {
	if o.IsTable() {
		return nil
	}
	w, err := r.Factory.GetWorkload(ctx, r.Clients, r.Name)
	if err != nil {
		return err
	}
	return r.Factory.PrintResult(o, w, r.Clients.Scheme)
}

// PatchError explains a failed patch of the workload guarded by its
// generation (JSONPatch.GuardGeneration). A concurrent change says so and
// to run the command again; doing, when set, says when (" while
// scaling"). Other errors are wrapped as "cannot <action>: <err>".
func (r *WorkloadRef) PatchError(err error, doing, action string) error {
	if errors.Is(err, ErrChanged) {
		return WithHints(fmt.Errorf("workload %s was changed by someone else%s; nothing was changed", r.Name, doing),
			"Run the command again.")
	}
	return fmt.Errorf("cannot %s: %w", action, err)
}
