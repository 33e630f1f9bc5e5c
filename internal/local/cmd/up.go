//go:build linux

package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/citycells/compute/internal/exitcode"
	"github.com/citycells/compute/internal/local/platform"
)

// upOptions are the options of `compute-local up`.
type upOptions struct {
	*globalOptions
	projects, cities, managers, identities, nodes string
	cfg                                           platform.Config
}

// newUpCommand builds `compute-local up`.
func newUpCommand(g *globalOptions) *cobra.Command {
	o := &upOptions{globalOptions: g, cfg: platform.Config{Detach: true}}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the platform and print what to type next",
		Long: `Start the platform and print what to type next. A second up against a running
platform starts nothing: it refreshes the identity tokens when fewer than 3.5
of their 7 days are left, and exits 0 when the platform is healthy and 1,
naming what is wrong, when it is not.

With --managers=auto (the default) a compute-manager that cannot be built is
skipped with a warning at the end; --managers=required fails instead.

With --identities=overlay (the default) every compute-manager and
compute-quota runs as the ServiceAccount its kustomize overlay creates, under
that overlay's RBAC, installed in every plane from config/overlays: what an
operator installs (docs/install.md). Their kubeconfigs, in <state>/identities,
name token files holding TokenRequest tokens valid for 7 days; the link proxy
(and a second up) mint them again halfway, and the processes read the new
ones without a restart. --identities=admin runs them
with the planes' admin kubeconfigs instead, for debugging.

With --replicas=2 every compute-manager role and compute-quota runs two
processes that elect a leader (Leases in compute-system, under the overlays'
leader-election RBAC), as the high-availability manifests run them; status
says which one leads. Kill the leader (compute-local stop --kill NAME) to
watch the other take over.`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.projects, "projects", platform.DefaultProject, "Comma-separated project names; each gets a project plane")
	f.StringVar(&o.cities, "cities", strings.Join(platform.DefaultCities, ","), "Comma-separated city codes; each gets a cell")
	f.StringVar(&o.nodes, "nodes", "auto", `Cities whose cell gets a real node (containerd, runc, CNI, kubelet, and metrics-server serving metrics.k8s.io) and runs the Kubernetes runtime provider: a comma-separated list, "all", "none", or "auto" (DFW, or the first city, when this machine can run a node; none otherwise, with a warning)`)
	f.StringVar(&o.managers, "managers", "auto", `compute-manager: "auto" (build or find it, start without it if impossible), "required" or "off"`)
	f.StringVar(&o.identities, "identities", string(platform.IdentitiesOverlay), `Whom compute-manager and compute-quota run as: "overlay" (the overlays' ServiceAccounts and RBAC) or "admin" (admin kubeconfigs, for debugging)`)
	f.StringVar(&o.cfg.ManagerBinary, "manager-binary", "", "compute-manager binary to run instead of building ./cmd/compute-manager")
	f.StringVar(&o.cfg.RepoDir, "repo", "", "compute repository (default: found above the working directory)")
	f.Int64Var(&o.cfg.QuotaGrant.Instances, "quota-instances", 0, "Instances in each project's default quota grant (default: compute-quota's, 10)")
	f.StringVar(&o.cfg.QuotaGrant.VCPU, "quota-vcpus", "", `vCPU in each project's default quota grant, as a quantity (default: compute-quota's, "40")`)
	f.StringVar(&o.cfg.QuotaGrant.Memory, "quota-memory", "", `Memory in each project's default quota grant, as a quantity (default: compute-quota's, "80Gi")`)
	f.DurationVar(&o.cfg.Timeout, "timeout", platform.DefaultTimeout, "How long to wait for each component to become ready")
	f.StringVar(&o.cfg.FeatureGates, "feature-gates", "", `compute's feature gates for every compute-manager, e.g. "NetworkingIntegration=true" (the cells then also run the networking stand-in)`)
	f.IntVar(&o.cfg.Replicas, "replicas", 1, fmt.Sprintf("Processes of each compute-manager role and of compute-quota (1 to %d); with more than one they elect a leader through a Lease in %s, as the high-availability manifests run them", platform.MaxReplicas, platform.LeaseNamespace))
	f.Var(durationPtr{&o.cfg.ProviderDelay}, "provider-delay", `Simulated provider's provisioning and teardown time in every cell, e.g. "0s" or "500ms" (default: compute-manager's, 2s)`)
	return cmd
}

// Complete resolves the state directory, the lists and the link proxy
// command (this executable).
func (o *upOptions) Complete(*cobra.Command, []string) error {
	dir, err := o.resolveStateDir()
	if err != nil {
		return err
	}
	o.cfg.StateDir = dir
	o.cfg.Projects = platform.SplitList(o.projects)
	o.cfg.Cities = platform.SplitList(o.cities)
	o.cfg.Managers = platform.ManagerMode(o.managers)
	if o.managers == "auto" {
		o.cfg.Managers = platform.ManagersAuto
	}
	o.cfg.Identities = platform.IdentityMode(o.identities)
	o.cfg.Log = o.streams.Err
	o.cfg.Nodes = platform.SplitList(o.nodes)
	if o.nodes == "auto" {
		o.cfg.Nodes = nil
		if err := platform.NodePrerequisites(); err != nil {
			o.cfg.NodesUnavailable = err.Error()
		} else if len(o.cfg.Cities) > 0 {
			o.cfg.Nodes = []string{autoNodeCity(o.cfg.Cities)}
		}
	}
	return nil
}

// autoNodeCity is the city --nodes=auto gives a node: DFW when the platform
// has it, else the first city.
func autoNodeCity(cities []string) string {
	for _, c := range cities {
		if strings.EqualFold(c, "DFW") {
			return c
		}
	}
	return cities[0]
}

// Validate checks the flags (Up checks names and amounts in detail).
func (o *upOptions) Validate() error {
	switch o.cfg.Managers {
	case platform.ManagersAuto, platform.ManagersOff, platform.ManagersRequired:
	default:
		return exitcode.UsageErrorf("--managers %q: use auto, required or off", o.managers)
	}
	switch o.cfg.Identities {
	case platform.IdentitiesOverlay, platform.IdentitiesAdmin:
	default:
		return exitcode.UsageErrorf("--identities %q: use overlay or admin", o.identities)
	}
	if o.cfg.Timeout <= 0 {
		return exitcode.UsageErrorf("--timeout must be positive, got %s", o.cfg.Timeout)
	}
	if o.cfg.Replicas < 1 || o.cfg.Replicas > platform.MaxReplicas {
		return exitcode.UsageErrorf("--replicas %d: run 1 to %d replicas", o.cfg.Replicas, platform.MaxReplicas)
	}
	return nil
}

// Run starts the platform.
func (o *upOptions) Run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	exe, err := keepExecutable(o.cfg.StateDir)
	if err != nil {
		return err
	}
	o.cfg.LinkProxyCommand = []string{exe, platform.LinkProxyCommandName}
	o.cfg.RegistryCommand = []string{exe, platform.RegistryCommandName}
	p, err := platform.Up(ctx, o.cfg)
	var running *platform.AlreadyRunningError
	if errors.As(err, &running) {
		return alreadyRunning(ctx, o.streams, running)
	}
	if err != nil {
		return err
	}
	st := p.State()
	printNext(o.streams.Out, st)
	printSkippedWarning(o.streams.Err, st.Skipped)
	return nil
}

// keepExecutable copies this compute-local into <state>/bin, where the link
// proxy runs from: `go run` deletes its binary when it exits, and `start
// link-proxy` must find it later.
func keepExecutable(stateDir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find this executable to run the link proxy with: %w", err)
	}
	dst := filepath.Join(stateDir, "bin", "compute-local")
	if self == dst {
		return dst, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", fmt.Errorf("failed to create %s: %w", filepath.Dir(dst), err)
	}
	in, err := os.Open(self)
	if err != nil {
		return "", fmt.Errorf("failed to read %s: %w", self, err)
	}
	defer func() { _ = in.Close() }()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o700)
	if err != nil {
		return "", fmt.Errorf("failed to write %s: %w", tmp, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return "", fmt.Errorf("failed to write %s: %w", tmp, err)
	}
	if err := out.Close(); err != nil {
		return "", fmt.Errorf("failed to write %s: %w", tmp, err)
	}
	// A rename replaces the file a running link proxy still executes
	// without disturbing it.
	if err := os.Rename(tmp, dst); err != nil {
		return "", fmt.Errorf("failed to write %s: %w", dst, err)
	}
	return dst, nil
}

// alreadyRunning answers a second `up`: it refreshes the identity tokens
// when they are due, then exits 0 when the running platform is healthy, 1
// naming every problem otherwise.
func alreadyRunning(ctx context.Context, s Streams, running *platform.AlreadyRunningError) error {
	res, err := platform.TokenRefresher{Dir: running.State.Dir}.Refresh(ctx, false)
	switch {
	case err != nil:
		return fmt.Errorf("%w; and its identity tokens could not be refreshed: %w", running, err)
	case res.Refreshed:
		fprintf(s.Err, "refreshed %d identity tokens of the running platform; valid until %s\n", res.Tokens, res.Expire.Local().Format(time.DateTime))
		running.State.IdentityTokensExpire = res.Expire
	}
	report, err := platform.Status(ctx, running.State.Dir)
	if err != nil {
		return fmt.Errorf("%w; and its status cannot be read: %w", running, err)
	}
	if report.OK {
		fprintf(s.Err, "compute-local is already running in %s (started %s); nothing to do.\n",
			running.State.Dir, running.State.StartedAt.Local().Format(time.DateTime))
		printNext(s.Out, *running.State)
		return nil
	}
	return fmt.Errorf("%w\n%s", running, problemList(report.Problems))
}

// problemList renders problems one per line, indented.
func problemList(problems []platform.Problem) string {
	lines := make([]string, 0, len(problems))
	for _, p := range problems {
		lines = append(lines, "  "+p.String())
	}
	return strings.Join(lines, "\n")
}

// printSkippedWarning ends `up` with a block naming what did not start.
func printSkippedWarning(w io.Writer, all []platform.SkippedRecord) {
	var skipped []platform.SkippedRecord
	for _, s := range all {
		if !s.Chosen() {
			skipped = append(skipped, s)
		}
	}
	if len(skipped) == 0 {
		return
	}
	fprintf(w, "\nWARNING: the platform runs WITHOUT %d component(s):\n", len(skipped))
	for _, s := range skipped {
		fprintf(w, "  %s: %s\n", s.Name, firstLine(s.Reason))
	}
	fprintln(w, "Workloads are not reconciled without compute-manager, and `compute-local status` exits 1 until")
	fprintln(w, "they run: fix the cause, then `compute-local down && compute-local up` (--managers=required fails instead).")
}

// printNext prints the kubeconfigs and the commands to type next.
func printNext(w io.Writer, st platform.State) {
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
	switch {
	case st.Identities == platform.IdentitiesOverlay && !st.IdentityTokensExpire.IsZero():
		fprintf(w, "compute-manager and compute-quota run as the overlays' ServiceAccounts, under their RBAC: kubeconfigs in %s (tokens valid until %s, refreshed before)\n",
			st.IdentitiesDir(), st.IdentityTokensExpire.Local().Format(time.DateTime))
	case st.Identities == platform.IdentitiesAdmin:
		fprintln(w, "compute-manager and compute-quota run with the planes' admin kubeconfigs (--identities=admin)")
	}
	fprintf(w, "Logs: %s/logs/\n\nNext:\n", st.Dir)
	if p, ok := st.DefaultPlane(); ok {
		fprintf(w, "  export KUBECONFIG=%s\n", platform.ShellQuote(p.Kubeconfig))
		fprintln(w, "  kubectl get locationbindings,workloads")
	}
	if hub, err := st.Plane(platform.HubPlane); err == nil {
		fprintf(w, "  kubectl --kubeconfig %s get clusters\n", platform.ShellQuote(hub.Kubeconfig))
	}
	fprintln(w, "  compute-local status    # every component and cluster")
	fprintln(w, "  compute-local down      # stop everything")
}

// downOptions are the options of `compute-local down`.
type downOptions struct {
	*globalOptions
	dir string
}

// newDownCommand builds `compute-local down`.
func newDownCommand(g *globalOptions) *cobra.Command {
	o := &downOptions{globalOptions: g}
	return &cobra.Command{
		Use:   "down",
		Short: "Stop every process of the platform",
		Args:  cobra.NoArgs,
		RunE:  runE(o),
	}
}

// Complete resolves the state directory.
func (o *downOptions) Complete(*cobra.Command, []string) error {
	var err error
	o.dir, err = o.resolveStateDir()
	return err
}

// Validate has nothing to check.
func (o *downOptions) Validate() error { return nil }

// Run stops everything.
func (o *downOptions) Run(context.Context) error {
	began := time.Now()
	stopped, err := platform.StopRecorded(o.dir)
	if errors.Is(err, platform.ErrNotRunning) {
		fprintf(o.streams.Err, "nothing to stop: no platform is recorded in %s\n", o.dir)
		return nil
	}
	if err != nil {
		return err
	}
	fprintf(o.streams.Err, "stopped %d processes in %s; kubeconfigs and logs are kept in %s\n",
		len(stopped), time.Since(began).Round(10*time.Millisecond), o.dir)
	return nil
}
