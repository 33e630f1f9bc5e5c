//go:build linux

package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/citycells/compute/internal/exitcode"
	"github.com/citycells/compute/internal/local/platform"
)

// statusOptions are the options of `compute-local status`.
type statusOptions struct {
	*globalOptions
	output string
	dir    string
}

// newStatusCommand builds `compute-local status`.
func newStatusCommand(g *globalOptions) *cobra.Command {
	o := &statusOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every component and Karmada cluster; exit 0 only when all are up",
		Long: `Show every component, Karmada cluster and partitioned city. Exit 0 only when
every component started and is ready (its readiness endpoint answers: for
compute-manager and compute-quota that means caches synced and webhooks
serving), every Cluster is Ready and no city is partitioned; otherwise exit 1
and name each problem on stderr. Exit 3 when no platform is recorded.`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "Output format: table or json")
	return cmd
}

// Complete resolves the state directory.
func (o *statusOptions) Complete(*cobra.Command, []string) error {
	var err error
	o.dir, err = o.resolveStateDir()
	return err
}

// Validate checks -o.
func (o *statusOptions) Validate() error {
	if o.output != "table" && o.output != "json" {
		return exitcode.UsageErrorf("unknown output %q: use table or json", o.output)
	}
	return nil
}

// Run reports.
func (o *statusOptions) Run(ctx context.Context) error {
	report, err := platform.Status(ctx, o.dir)
	if err != nil {
		return err
	}
	if o.output == "json" {
		enc := json.NewEncoder(o.streams.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		printStatus(o.streams.Out, report)
	}
	if !report.OK {
		return fmt.Errorf("the platform is not healthy:\n%s", problemList(report.Problems))
	}
	return nil
}

// printStatus renders a status report as tables.
func printStatus(w io.Writer, r *platform.StatusReport) {
	tw := newTable(w)
	fprintln(tw, "COMPONENT\tPID\tPORT\tREADY\tRSS\tDETAIL")
	for _, c := range r.Components {
		port := "-"
		if c.Port != 0 {
			port = fmt.Sprint(c.Port)
		}
		ready := yesNo(c.Ready)
		if c.Stopped && !c.Alive {
			ready = "stopped"
		}
		detail := firstLine(c.Detail)
		if detail == "" && c.Election != "" {
			// A replicated process: which one reconciles.
			detail = c.Election
		}
		fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", c.Name, c.PID, port, ready, mib(c.RSS), detail)
	}
	for _, s := range r.Skipped {
		fprintf(tw, "%s\t-\t-\tskipped\t-\t%s\n", s.Name, firstLine(s.Reason))
	}
	fprintln(tw)
	fprintln(tw, "CLUSTER\tCITY\tREADY\tLINK\tREASON")
	for _, c := range r.Clusters {
		link := "connected"
		if c.Partitioned {
			link = "PARTITIONED"
			if !c.PartitionedUntil.IsZero() {
				link += fmt.Sprintf(" (heals in %s)", time.Until(c.PartitionedUntil).Round(time.Second))
			}
		}
		fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, c.City, yesNo(c.Ready), link, c.Reason)
	}
	if len(r.Nodes) > 0 {
		fprintln(tw)
		fprintln(tw, "NODE\tCITY\tREADY\tPOD RANGE\tREASON")
		for _, n := range r.Nodes {
			fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.Name, n.City, yesNo(n.Ready), n.PodCIDR, n.Reason)
		}
	}
	_ = tw.Flush()
	if r.Registry != "" {
		fprintf(w, "\nregistry %s (the demo image: %s/%s)\n", r.Registry, r.Registry, platform.DemoImage)
	}
	state := "up"
	switch {
	case r.Starting:
		state = "still starting"
	case !r.OK:
		state = fmt.Sprintf("DEGRADED (%d problems)", len(r.Problems))
	}
	fprintf(w, "\nplatform %s; started %s; %d components, total RSS %s; state in %s\n",
		state, r.StartedAt.Local().Format(time.DateTime), len(r.Components), mib(r.RSS), r.Dir)
	printTokens(w, r, time.Now())
}

// printTokens says when the identity tokens expire and whether they are
// refreshed.
func printTokens(w io.Writer, r *platform.StatusReport, now time.Time) {
	if r.IdentityTokensExpire.IsZero() {
		return
	}
	left := r.IdentityTokensExpire.Sub(now).Round(time.Minute)
	switch {
	case left <= 0:
		fprintf(w, "identity tokens EXPIRED at %s: run `compute-local up` to mint them again\n", r.IdentityTokensExpire.Local().Format(time.DateTime))
	case r.IdentityTokensRefreshed:
		fprintf(w, "identity tokens expire %s (in %s); the link proxy and `compute-local up` refresh them once half the lifetime the server granted is gone\n",
			r.IdentityTokensExpire.Local().Format(time.DateTime), left)
	default:
		fprintf(w, "identity tokens expire %s (in %s) and are not refreshed (the kubeconfigs hold them): then `compute-local down && compute-local up`\n",
			r.IdentityTokensExpire.Local().Format(time.DateTime), left)
	}
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

// kubeconfigOptions are the options of `compute-local kubeconfig PLANE`.
type kubeconfigOptions struct {
	stateOptions
	plane string
}

// newKubeconfigCommand builds `compute-local kubeconfig PLANE`.
func newKubeconfigCommand(g *globalOptions) *cobra.Command {
	o := &kubeconfigOptions{stateOptions: stateOptions{globalOptions: g}}
	return &cobra.Command{
		Use:   "kubeconfig PLANE",
		Short: "Print the kubeconfig path of a plane: project (or a project name), hub, cell-dfw, ...",
		Args:  cobra.ExactArgs(1),
		RunE:  runE(o),
	}
}

// Complete takes the plane and reads the state.
func (o *kubeconfigOptions) Complete(cmd *cobra.Command, args []string) error {
	o.plane = args[0]
	return o.stateOptions.Complete(cmd, args)
}

// Validate has nothing to check: Run names the planes there are.
func (o *kubeconfigOptions) Validate() error { return nil }

// Run prints the path.
func (o *kubeconfigOptions) Run(context.Context) error {
	p, err := o.state.Plane(o.plane)
	if err != nil {
		return &exitcode.Error{Code: ExitUsage, Err: err}
	}
	fprintln(o.streams.Out, p.Kubeconfig)
	return nil
}

// envOptions are the options of `compute-local env`.
type envOptions struct {
	stateOptions
}

// newEnvCommand builds `compute-local env`.
func newEnvCommand(g *globalOptions) *cobra.Command {
	o := &envOptions{stateOptions: stateOptions{globalOptions: g}}
	return &cobra.Command{
		Use:   "env",
		Short: "Print shell exports for every plane (eval \"$(compute-local env)\")",
		Args:  cobra.NoArgs,
		RunE:  runE(o),
	}
}

// Validate has nothing to check.
func (o *envOptions) Validate() error { return nil }

// Run prints the exports.
func (o *envOptions) Run(context.Context) error {
	for _, line := range o.state.Exports() {
		fprintln(o.streams.Out, line)
	}
	return nil
}
