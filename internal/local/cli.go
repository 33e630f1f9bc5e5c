package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// Exit codes of compute-local.
const (
	// ExitOK means success (status: everything is up).
	ExitOK = 0
	// ExitFailure means the command failed (status: something is down).
	ExitFailure = 1
	// ExitUsage means the command line was wrong.
	ExitUsage = 2
	// ExitNotRunning means no platform is recorded in the state directory.
	ExitNotRunning = 3
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Streams are the command's input and output.
type Streams struct {
	// Out receives results; Err receives progress and errors.
	Out, Err io.Writer
}

// cliOptions are the flags shared by every command.
type cliOptions struct {
	streams  Streams
	stateDir string
}

// resolveStateDir returns --state-dir or the default.
func (o *cliOptions) resolveStateDir() (string, error) {
	if o.stateDir != "" {
		return o.stateDir, nil
	}
	return DefaultStateDir()
}

// Main runs compute-local with args and returns its exit code.
func Main(args []string, streams Streams) int {
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fprintf(streams.Err, "compute-local: %v\n", ee.err)
		}
		return ee.code
	}
	fprintf(streams.Err, "compute-local: %v\nRun compute-local --help for usage.\n", err)
	return ExitUsage
}

// NewCommand builds the compute-local command tree.
func NewCommand(streams Streams) *cobra.Command {
	o := &cliOptions{streams: streams}
	root := &cobra.Command{
		Use:   "compute-local",
		Short: "Run compute's local platform: project plane, Karmada federation plane and city cells",
		Long: `compute-local runs a complete local compute platform from real components
(etcd, kube-apiserver, kube-controller-manager, Karmada, compute-manager),
with no Docker and no external cluster. State, kubeconfigs and logs live in
the state directory (--state-dir, $` + EnvStateDir + `, default
$XDG_STATE_HOME/compute-local or ~/.local/state/compute-local).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.PersistentFlags().StringVar(&o.stateDir, "state-dir", "", "State directory (default $"+EnvStateDir+", then the user state directory)")
	root.AddCommand(newUpCommand(o), newDownCommand(o), newStatusCommand(o), newKubeconfigCommand(o), newEnvCommand(o))
	return root
}

// newUpCommand builds `compute-local up`.
func newUpCommand(o *cliOptions) *cobra.Command {
	var projects, cities, managers string
	cfg := Config{Detach: true}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the platform and print what to type next",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := o.resolveStateDir()
			if err != nil {
				return &exitError{ExitFailure, err}
			}
			cfg.StateDir = dir
			cfg.Projects = SplitList(projects)
			cfg.Cities = SplitList(cities)
			cfg.Managers = ManagerMode(managers)
			if managers == "auto" {
				cfg.Managers = ManagersAuto
			}
			cfg.Log = o.streams.Err
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			p, err := Up(ctx, cfg)
			var running *AlreadyRunningError
			if errors.As(err, &running) {
				return alreadyRunning(cmd.Context(), o.streams, running)
			}
			if err != nil {
				return &exitError{ExitFailure, err}
			}
			printNext(o.streams.Out, p.State())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&projects, "projects", DefaultProject, "Comma-separated project names; each gets a project plane")
	f.StringVar(&cities, "cities", strings.Join(DefaultCities, ","), "Comma-separated city codes; each gets a cell")
	f.StringVar(&managers, "managers", "auto", `compute-manager: "auto" (build or find it, start without it if impossible), "required" or "off"`)
	f.StringVar(&cfg.ManagerBinary, "manager-binary", "", "compute-manager binary to run instead of building ./cmd/compute-manager")
	f.StringVar(&cfg.RepoDir, "repo", "", "compute repository (default: found above the working directory)")
	f.Int64Var(&cfg.QuotaGrant.Instances, "quota-instances", 0, "Instances in each project's default quota grant (default: compute-quota's, 10)")
	f.StringVar(&cfg.QuotaGrant.VCPU, "quota-vcpus", "", `vCPU in each project's default quota grant, as a quantity (default: compute-quota's, "40")`)
	f.StringVar(&cfg.QuotaGrant.Memory, "quota-memory", "", `Memory in each project's default quota grant, as a quantity (default: compute-quota's, "80Gi")`)
	f.DurationVar(&cfg.Timeout, "timeout", DefaultTimeout, "How long to wait for each component to become ready")
	f.Var(durationPtr{&cfg.ProviderDelay}, "provider-delay", `Simulated provider's provisioning and teardown time in every cell, e.g. "0s" or "500ms" (default: compute-manager's, 2s)`)
	return cmd
}

// alreadyRunning answers a second `up`: exit 0 when the running platform
// is healthy, 1 otherwise.
func alreadyRunning(ctx context.Context, s Streams, running *AlreadyRunningError) error {
	report, err := Status(ctx, running.State.Dir)
	if err == nil && report.OK {
		fprintf(s.Err, "compute-local is already running in %s (started %s); nothing to do.\n",
			running.State.Dir, running.State.StartedAt.Local().Format(time.DateTime))
		printNext(s.Out, *running.State)
		return nil
	}
	return &exitError{ExitFailure, running}
}

// printNext prints the kubeconfigs and the commands to type next.
func printNext(w io.Writer, st State) {
	fprintln(w, "Kubeconfigs:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, p := range st.Planes {
		fprintf(tw, "  %s\t%s\t%s\n", p.Name, p.URL, p.Kubeconfig)
	}
	_ = tw.Flush()
	if len(st.Skipped) > 0 {
		fprintln(w, "Not started:")
		for _, s := range st.Skipped {
			fprintf(w, "  %s: %s\n", s.Name, firstLine(s.Reason))
		}
	}
	fprintf(w, "Logs: %s/logs/\n\nNext:\n", st.Dir)
	if p, ok := st.DefaultPlane(); ok {
		fprintf(w, "  export KUBECONFIG=%s\n", shellQuote(p.Kubeconfig))
		fprintln(w, "  kubectl get locationbindings,workloads")
	}
	if hub, err := st.Plane(HubPlane); err == nil {
		fprintf(w, "  kubectl --kubeconfig %s get clusters\n", shellQuote(hub.Kubeconfig))
	}
	fprintln(w, "  compute-local status    # every component and cluster")
	fprintln(w, "  compute-local down      # stop everything")
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// newDownCommand builds `compute-local down`.
func newDownCommand(o *cliOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop every process of the platform",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			dir, err := o.resolveStateDir()
			if err != nil {
				return &exitError{ExitFailure, err}
			}
			began := time.Now()
			stopped, err := StopRecorded(dir)
			if errors.Is(err, ErrNotRunning) {
				fprintf(o.streams.Err, "nothing to stop: no platform is recorded in %s\n", dir)
				return nil
			}
			if err != nil {
				return &exitError{ExitFailure, err}
			}
			fprintf(o.streams.Err, "stopped %d processes in %s; kubeconfigs and logs are kept in %s\n",
				len(stopped), time.Since(began).Round(10*time.Millisecond), dir)
			return nil
		},
	}
}

// newStatusCommand builds `compute-local status`.
func newStatusCommand(o *cliOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every component and Karmada cluster; exit 0 only when all are up",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return &exitError{ExitUsage, fmt.Errorf("unknown output %q: use table or json", output)}
			}
			dir, err := o.resolveStateDir()
			if err != nil {
				return &exitError{ExitFailure, err}
			}
			report, err := Status(cmd.Context(), dir)
			if errors.Is(err, ErrNotRunning) {
				return &exitError{ExitNotRunning, err}
			}
			if err != nil {
				return &exitError{ExitFailure, err}
			}
			if output == "json" {
				enc := json.NewEncoder(o.streams.Out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(report); err != nil {
					return &exitError{ExitFailure, err}
				}
			} else {
				printStatus(o.streams.Out, report)
			}
			if !report.OK {
				return &exitError{ExitFailure, errors.New("")}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "Output format: table or json")
	return cmd
}

// printStatus renders a status report as tables.
func printStatus(w io.Writer, r *StatusReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fprintln(tw, "COMPONENT\tPID\tPORT\tREADY\tRSS\tDETAIL")
	for _, c := range r.Components {
		port := "-"
		if c.Port != 0 {
			port = fmt.Sprint(c.Port)
		}
		fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", c.Name, c.PID, port, yesNo(c.Ready), mib(c.RSS), c.Detail)
	}
	for _, s := range r.Skipped {
		fprintf(tw, "%s\t-\t-\tskipped\t-\t%s\n", s.Name, firstLine(s.Reason))
	}
	fprintln(tw)
	fprintln(tw, "CLUSTER\tCITY\tREADY\tREASON")
	for _, c := range r.Clusters {
		fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.City, yesNo(c.Ready), c.Reason)
	}
	_ = tw.Flush()
	state := "up"
	switch {
	case r.Starting:
		state = "still starting"
	case !r.OK:
		state = "DEGRADED"
	}
	fprintf(w, "\nplatform %s; started %s; %d components, total RSS %s; state in %s\n",
		state, r.StartedAt.Local().Format(time.DateTime), len(r.Components), mib(r.RSS), r.Dir)
}

// yesNo renders a readiness.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// mib renders bytes in MiB.
func mib(b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%dMi", b>>20)
}

// newKubeconfigCommand builds `compute-local kubeconfig PLANE`.
func newKubeconfigCommand(o *cliOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "kubeconfig PLANE",
		Short: "Print the kubeconfig path of a plane: project (or a project name), hub, cell-dfw, ...",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			st, err := o.readState()
			if err != nil {
				return err
			}
			p, err := st.Plane(args[0])
			if err != nil {
				return &exitError{ExitUsage, err}
			}
			fprintln(o.streams.Out, p.Kubeconfig)
			return nil
		},
	}
}

// newEnvCommand builds `compute-local env`.
func newEnvCommand(o *cliOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "env",
		Short: "Print shell exports for every plane (eval \"$(compute-local env)\")",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			st, err := o.readState()
			if err != nil {
				return err
			}
			for _, line := range st.Exports() {
				fprintln(o.streams.Out, line)
			}
			return nil
		},
	}
}

// readState reads the state of the chosen directory.
func (o *cliOptions) readState() (*State, error) {
	dir, err := o.resolveStateDir()
	if err != nil {
		return nil, &exitError{ExitFailure, err}
	}
	st, err := ReadState(dir)
	if errors.Is(err, ErrNotRunning) {
		return nil, &exitError{ExitNotRunning, err}
	}
	if err != nil {
		return nil, &exitError{ExitFailure, err}
	}
	return st, nil
}

// fprintf writes to a terminal stream; there is nothing useful to do when
// that fails.
func fprintf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}

// fprintln is fprintf for fmt.Fprintln.
func fprintln(w io.Writer, args ...any) {
	_, _ = fmt.Fprintln(w, args...)
}
