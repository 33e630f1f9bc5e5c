//go:build linux

package cmd

import (
	"context"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/citycells/compute/internal/exitcode"
	"github.com/citycells/compute/internal/local/faults"
	"github.com/citycells/compute/internal/local/platform"
)

// newTable returns a tabwriter for the command's tables.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// componentOptions are the options of stop, start and restart.
type componentOptions struct {
	*globalOptions
	verb    string
	name    string
	kill    bool
	timeout time.Duration
	dir     string
}

// newComponentCommand builds `compute-local stop|start|restart COMPONENT`.
func newComponentCommand(g *globalOptions, verb, short, long string) *cobra.Command {
	o := &componentOptions{globalOptions: g, verb: verb, timeout: platform.DefaultTimeout}
	cmd := &cobra.Command{
		Use:   verb + " COMPONENT",
		Short: short,
		Long: long + `

COMPONENT is a name from the COMPONENT column of ` + "`compute-local status`" + `: etcd,
kube-apiserver-cell-lhr, kube-apiserver-hub, karmada-controller-manager,
karmada-scheduler, compute-manager-cell-dfw, compute-manager-project-default,
compute-quota-project-default, link-proxy, ...`,
		Example: "  compute-local " + verb + " compute-manager-cell-lhr\n  compute-local " + verb + " kube-apiserver-hub",
		Args:    cobra.ExactArgs(1),
		RunE:    runE(o),
	}
	if verb != "start" {
		cmd.Flags().BoolVar(&o.kill, "kill", false, "Send SIGKILL at once, like a crash (default: SIGTERM, then SIGKILL after 5s)")
	}
	if verb != "stop" {
		cmd.Flags().DurationVar(&o.timeout, "timeout", o.timeout, "How long to wait for the component to become ready")
	}
	return cmd
}

func newStopCommand(g *globalOptions) *cobra.Command {
	return newComponentCommand(g, "stop", "Stop one component of the platform (a fault: status then exits 1 naming it)",
		"Stop one process of the platform and record that it was stopped on purpose.")
}

func newStartCommand(g *globalOptions) *cobra.Command {
	return newComponentCommand(g, "start", "Start a stopped or crashed component again and wait until it is ready",
		"Start a component that was stopped (or died) with the command line it was started with, and wait\nuntil its readiness endpoint answers. A component that runs is left alone.")
}

func newRestartCommand(g *globalOptions) *cobra.Command {
	return newComponentCommand(g, "restart", "Stop a component and start it again",
		"Stop a component (--kill: like a crash) and start it again with the same command line.")
}

// Complete resolves the state directory.
func (o *componentOptions) Complete(_ *cobra.Command, args []string) error {
	o.name = strings.TrimSpace(args[0])
	var err error
	o.dir, err = o.resolveStateDir()
	return err
}

// Validate checks the timeout.
func (o *componentOptions) Validate() error {
	if o.timeout <= 0 {
		return exitcode.UsageErrorf("--timeout must be positive, got %s", o.timeout)
	}
	return nil
}

// Run stops and/or starts the component.
func (o *componentOptions) Run(ctx context.Context) error {
	began := time.Now()
	if o.verb != "start" {
		c, err := platform.StopRecordedComponent(o.dir, o.name, platform.StopOptions{Kill: o.kill})
		if err != nil {
			return err
		}
		fprintf(o.streams.Err, "stopped %s (pid %d) in %s\n", c.Name, c.PID, since(began))
	}
	if o.verb == "stop" {
		return nil
	}
	began = time.Now()
	c, err := platform.StartRecordedComponent(ctx, o.dir, o.name, o.timeout)
	if err != nil {
		return err
	}
	fprintf(o.streams.Err, "%s runs (pid %d) and is ready (%s)\n", c.Name, c.PID, since(began))
	return nil
}

// cityOptions are the options of the commands on one city of a running
// platform, named by their CITY argument.
type cityOptions struct {
	stateOptions
	city string
}

// newCityOptions returns the options of a city command.
func newCityOptions(g *globalOptions) cityOptions {
	return cityOptions{stateOptions: stateOptions{globalOptions: g}}
}

// Complete takes the city and reads the state.
func (o *cityOptions) Complete(cmd *cobra.Command, args []string) error {
	o.city = strings.ToUpper(strings.TrimSpace(args[0]))
	return o.stateOptions.Complete(cmd, args)
}

// Validate checks that the platform has the city.
func (o *cityOptions) Validate() error { return validCity(o.state, o.city) }

// faultControl returns a client of the platform's fault control.
func (o *cityOptions) faultControl() (*faults.Client, error) {
	return faults.NewClient(o.state.FaultControl)
}

// partitionOptions are the options of `compute-local partition CITY`.
type partitionOptions struct {
	cityOptions
	dur  time.Duration
	drop bool
}

// newPartitionCommand builds `compute-local partition CITY [--for D]`.
func newPartitionCommand(g *globalOptions) *cobra.Command {
	o := &partitionOptions{cityOptions: newCityOptions(g)}
	cmd := &cobra.Command{
		Use:   "partition CITY",
		Short: "Cut a city off from the hub and the projects; the cell keeps running",
		Long: `Cut a city off from the hub and the projects, as a broken uplink would: Karmada
cannot reach the cell's apiserver, and the cell's compute-manager cannot reach
the hub (write-back) or the projects (quota). The cell itself keeps running and
reconciling. Open connections are cut; new ones hang unanswered (--drop:
refused at once). --for heals it by itself after the duration; otherwise
` + "`compute-local heal CITY`" + ` does. ` + "`compute-local status`" + ` shows partitioned cities.`,
		Example: "  compute-local partition LHR --for 60s\n  compute-local partition LHR && compute-local heal LHR",
		Args:    cobra.ExactArgs(1),
		RunE:    runE(o),
	}
	cmd.Flags().DurationVar(&o.dur, "for", 0, "Heal by itself after this long (default: until `heal`)")
	cmd.Flags().BoolVar(&o.drop, "drop", false, "Refuse connections at once instead of letting them hang")
	return cmd
}

// Validate checks the city and the duration.
func (o *partitionOptions) Validate() error {
	if err := o.cityOptions.Validate(); err != nil {
		return err
	}
	if o.dur < 0 {
		return exitcode.UsageErrorf("--for must not be negative, got %s", o.dur)
	}
	return nil
}

// Run partitions.
func (o *partitionOptions) Run(ctx context.Context) error {
	fc, err := o.faultControl()
	if err != nil {
		return err
	}
	mode := faults.PartitionHang
	if o.drop {
		mode = faults.PartitionDrop
	}
	rec, err := fc.Partition(ctx, o.city, o.dur, mode)
	if err != nil {
		return err
	}
	if rec.Until.IsZero() {
		fprintf(o.streams.Err, "%s is partitioned (%s) until `compute-local heal %s`\n", o.city, mode, o.city)
	} else {
		fprintf(o.streams.Err, "%s is partitioned (%s) until %s, in %s\n", o.city, mode, rec.Until.Local().Format(time.TimeOnly), o.dur)
	}
	return nil
}

// healOptions are the options of `compute-local heal CITY`.
type healOptions struct {
	cityOptions
}

// newHealCommand builds `compute-local heal CITY`.
func newHealCommand(g *globalOptions) *cobra.Command {
	o := &healOptions{cityOptions: newCityOptions(g)}
	return &cobra.Command{
		Use:   "heal CITY",
		Short: "Reconnect a partitioned city",
		Args:  cobra.ExactArgs(1),
		RunE:  runE(o),
	}
}

// Run heals.
func (o *healOptions) Run(ctx context.Context) error {
	fc, err := o.faultControl()
	if err != nil {
		return err
	}
	was, err := fc.Heal(ctx, o.city)
	if err != nil {
		return err
	}
	if was {
		fprintf(o.streams.Err, "%s is connected again\n", o.city)
	} else {
		fprintf(o.streams.Err, "%s was not partitioned; nothing to do\n", o.city)
	}
	return nil
}

// validCity checks that city has a cell in st.
func validCity(st *platform.State, city string) error {
	cities := make([]string, 0, len(st.Clusters))
	for _, c := range st.Clusters {
		if c.City == city {
			return nil
		}
		cities = append(cities, c.City)
	}
	return exitcode.UsageErrorf("no city %q in this platform: its cities are %s", city, strings.Join(cities, ", "))
}

// linkProxyOptions are the options of the hidden `link-proxy` command.
type linkProxyOptions struct {
	serverOptions
	control string
	links   []string
}

// newLinkProxyCommand builds the hidden command a detached platform runs
// its link proxy with.
func newLinkProxyCommand(g *globalOptions) *cobra.Command {
	o := &linkProxyOptions{serverOptions: serverOptions{globalOptions: g}}
	cmd := newServerCommand(platform.LinkProxyCommandName, "Serve the cities' links (run by compute-local up)", o)
	cmd.Flags().StringVar(&o.control, "control", "", "host:port of the control endpoint")
	cmd.Flags().StringArrayVar(&o.links, "link", nil, "name,CITY,port,target-host:port (repeated)")
	return cmd
}

// Validate checks the control address and the links.
func (o *linkProxyOptions) Validate() error {
	if o.control == "" {
		return exitcode.UsageErrorf("--control is required")
	}
	for _, l := range o.links {
		if _, err := faults.ParseLinkArg(l); err != nil {
			return exitcode.UsageErrorf("%v", err)
		}
	}
	return nil
}

// Run serves until SIGTERM, refreshing the platform's identity tokens
// before they expire meanwhile: the link proxy is the one process of a
// detached platform that runs compute-local for as long as the platform
// does.
func (o *linkProxyOptions) Run(ctx context.Context) error {
	return serveUntilSignal(ctx, func(ctx context.Context) error {
		if dir, err := o.resolveStateDir(); err == nil {
			refresher := platform.TokenRefresher{Dir: dir}
			go refresher.Run(ctx, platform.TokenCheckInterval, func(format string, args ...any) {
				fprintf(o.streams.Err, format+"\n", args...)
			})
		}
		return faults.RunLinkProxy(ctx, o.control, o.links)
	})
}
