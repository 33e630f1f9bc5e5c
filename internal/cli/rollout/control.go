package rollout

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
)

// Control actions on a rollout across cities.
const (
	actionPause   = "pause"
	actionResume  = "resume"
	actionApprove = "approve"
)

// ControlOptions are the options of `rollout pause|resume|approve`.
type ControlOptions struct {
	// WorkloadRef is the workload, resolved before Run.
	cmdutil.WorkloadRef
	// Output is -o: json or yaml print the resulting workload.
	Output *cmdutil.OutputFlags
	// Action is pause, resume or approve.
	Action string
	// DryRun is --dry-run: none, client (say what would change and stop)
	// or server (also have the server check it without storing it).
	DryRun string
}

// NewPauseCommand returns `rollout pause NAME`.
func NewPauseCommand(f *cmdutil.Factory) *cobra.Command {
	return newControlCommand(f, actionPause, "Stop a workload's rollout before the next city",
		"Set spec.rollout.paused: no further city gets the new template until `rollout resume`; cities\n"+
			"already updating finish. Scale changes still reach every city.")
}

// NewResumeCommand returns `rollout resume NAME`.
func NewResumeCommand(f *cmdutil.Factory) *cobra.Command {
	return newControlCommand(f, actionResume, "Continue a paused rollout",
		"Clear spec.rollout.paused: the rollout continues with the next cities of its wave.")
}

// NewApproveCommand returns `rollout approve NAME`.
func NewApproveCommand(f *cmdutil.Factory) *cobra.Command {
	return newControlCommand(f, actionApprove, "Let the next wave of a rollout start (approval: Manual)",
		"With spec.rollout.approval Manual every wave after the first waits for approval. Approve the wave the\n"+
			"rollout waits for; `rollout status` shows which.")
}

// newControlCommand builds one of the control commands.
func newControlCommand(f *cmdutil.Factory, action, short, long string) *cobra.Command {
	o := &ControlOptions{WorkloadRef: cmdutil.NewWorkloadRef(f), Output: cmdutil.NewOutputFlags(), Action: action}
	cmd := cmdutil.WorkloadCommand(f, &cobra.Command{
		Use:     action + " NAME",
		Short:   short,
		Long:    long,
		Example: "  datumctl compute rollout " + action + " web",
	}, o, o.Output)
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "what would change")
	return cmd
}

// Validate checks the flags.
func (o *ControlOptions) Validate() error {
	if err := cmdutil.ValidateDryRun(o.DryRun); err != nil {
		return err
	}
	return o.Output.Validate()
}

// Run pauses, resumes or approves.
func (o *ControlOptions) Run(ctx context.Context) error {
	w := o.Workload
	out, _ := o.Factory.Human(o.Output)
	if note := view.FailoverNote(o.Workload); note != "" {
		_, _ = fmt.Fprintln(out, note)
	}
	if w.Spec.Rollout == nil {
		return cmdutil.WithHints(
			fmt.Errorf("workload %s has no rollout strategy: a template change reaches every city at once, so there is nothing to %s", o.Name, o.Action),
			"Roll cities in waves by setting spec.rollout (see docs/rollouts.md), e.g. strategy: Canary.")
	}

	var p cmdutil.JSONPatch
	p.GuardGeneration(w.Generation)
	var done string
	switch o.Action {
	case actionPause, actionResume:
		paused := o.Action == actionPause
		if w.Spec.Rollout.Paused == paused {
			_, _ = fmt.Fprintf(out, "Nothing to do: the rollout of %s is already %s.\n", o.Name, map[bool]string{true: "paused", false: "running"}[paused])
			return o.Factory.PrintResult(o.Output, w, o.Clients.Scheme)
		}
		p.Add("/spec/rollout/paused", paused)
		done = fmt.Sprintf("Paused the rollout of %s: no further city gets the new template. Continue with: %s",
			o.Name, o.Factory.Cmd("rollout resume %s", o.Name))
		if !paused {
			done = fmt.Sprintf("Resumed the rollout of %s. Watch it with: %s", o.Name, o.Factory.Cmd("rollout status %s", o.Name))
		}
	case actionApprove:
		r := w.Status.Rollout
		if r == nil || r.Phase != computev1alpha.RolloutPhaseAwaitingApproval || r.TemplateHash != w.Status.CurrentTemplateHash {
			phase := "not reported yet"
			if r != nil {
				phase = string(r.Phase)
			}
			return cmdutil.WithHints(fmt.Errorf("the rollout of %s is not waiting for approval (it is %s)", o.Name, phase),
				"See where it stands with: "+o.Factory.Cmd("rollout status %s --watch=false", o.Name))
		}
		p.SetMapEntries("/metadata/annotations", w.Annotations,
			map[string]string{computev1alpha.RolloutApprovedAnnotation: fmt.Sprintf("%s:%d", r.TemplateHash, r.Wave)})
		done = fmt.Sprintf("Approved wave %d of %d of %s (revision %d). Watch it with: %s",
			r.Wave, r.Waves, o.Name, r.Revision, o.Factory.Cmd("rollout status %s", o.Name))
	}
	if o.DryRun != cmdutil.DryRunNone {
		return o.dryRun(ctx, out, p)
	}
	if err := p.Apply(ctx, o.Clients.Client, w); err != nil {
		return o.PatchError(err, "", fmt.Sprintf("%s the rollout of workload %s", o.Action, o.Name))
	}
	_, _ = fmt.Fprintln(out, done)
	return o.PrintCurrent(ctx, o.Output)
}

// dryRun says what the action would do and prints the workload as it
// would be: patched here with client, by the server with server.
func (o *ControlOptions) dryRun(ctx context.Context, out io.Writer, p cmdutil.JSONPatch) error {
	_, _ = fmt.Fprintf(out, "Would %s the rollout of %s.\n", o.Action, o.Name)
	result := o.Workload.DeepCopy()
	if o.DryRun == cmdutil.DryRunServer {
		if err := p.Apply(ctx, o.Clients.Client, result, cmdutil.PatchOptions(o.DryRun)...); err != nil {
			return o.PatchError(err, "", fmt.Sprintf("%s the rollout of workload %s", o.Action, o.Name))
		}
	} else {
		var err error
		if result, err = cmdutil.JSONPatched(result, p); err != nil {
			return err
		}
	}
	return o.Factory.DryRunDone(out, o.DryRun, o.Output, result, o.Clients.Scheme)
}
