//go:build linux

package platform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/citycells/compute/internal/local/faults"
)

// StopRecorded stops the platform recorded in dir from another process
// than the one that started it (compute-local down): every recorded process
// group, managers first and etcd last, then any process left behind by an
// interrupted start (one whose arguments point into dir). It removes the
// state file and returns what it stopped; ErrNotRunning when nothing is
// recorded and nothing is left behind.
func StopRecorded(dir string) ([]ComponentRecord, error) {
	st, err := ReadState(dir)
	if err != nil && !errors.Is(err, ErrNotRunning) {
		return nil, err
	}
	var recorded []ComponentRecord
	if st != nil {
		recorded = st.Components
		// The nodes' Pods go first, while their containerd still runs.
		cleanNodes(*st, io.Discard)
	}
	stopped, stopErr := stopComponents(recorded)
	strays := strayProcesses(dir, recorded)
	more, strayErr := stopComponents(strays)
	stopped = append(stopped, more...)
	if err := errors.Join(stopErr, strayErr); err != nil {
		return stopped, fmt.Errorf("some processes would not stop (the state file is kept so `compute-local down` can retry): %w", err)
	}
	if st == nil && len(stopped) == 0 {
		return nil, fmt.Errorf("%w (state directory %s)", ErrNotRunning, dir)
	}
	if st != nil {
		removeNodes(st.Nodes, io.Discard)
	}
	return stopped, removeState(dir)
}

// strayProcesses finds processes that belong to the platform in dir but are
// not recorded: a start killed before it wrote its state. They run a binary
// of the toolchain, compute-manager or compute-quota with an argument inside
// dir.
func strayProcesses(dir string, recorded []ComponentRecord) []ComponentRecord {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	known := map[int]bool{}
	for _, c := range recorded {
		known[c.PID] = true
	}
	self := os.Getpid()
	out := make([]ComponentRecord, 0, 8)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || known[pid] {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(cmdline) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if !ourBinary(args) || !slices.ContainsFunc(args[1:], func(a string) bool { return pointsInto(a, dir) }) {
			continue
		}
		// Only process-group leaders: the platform starts each component
		// in its own group, and stopping the leader's group stops the rest.
		if pgid, err := getpgid(pid); err != nil || pgid != pid {
			continue
		}
		out = append(out, ComponentRecord{Name: filepath.Base(args[0]), PID: pid, Binary: args[0]})
	}
	return out
}

// The hidden compute-local commands a detached platform runs its link proxy
// and its registry with (Config.LinkProxyCommand, Config.RegistryCommand):
// a process running one of them with an argument in the state directory
// belongs to the platform.
const (
	// LinkProxyCommandName is the hidden command that serves the links.
	LinkProxyCommandName = "link-proxy"
	// RegistryCommandName is the hidden command that serves the registry.
	RegistryCommandName = "registry"
)

// ourBinary reports whether a command line runs a platform executable:
// a component, or compute-local serving the links.
func ourBinary(args []string) bool {
	if len(args) > 1 && (args[1] == LinkProxyCommandName || args[1] == RegistryCommandName) {
		return true
	}
	switch filepath.Base(args[0]) {
	case "etcd", "kube-apiserver", "kube-controller-manager", "karmada-aggregated-apiserver", "karmada-webhook",
		"karmada-controller-manager", "karmada-scheduler", managerBinaryName, quotaBinaryName,
		componentContainerd, componentKubelet, componentKubeScheduler, componentMetricsServer:
		return true
	}
	return false
}

// pointsInto reports whether a --flag=value argument names a path in dir.
func pointsInto(arg, dir string) bool {
	_, value, ok := strings.Cut(arg, "=")
	if !ok {
		value = arg
	}
	return value == dir || strings.HasPrefix(value, dir+string(filepath.Separator))
}

// getpgid returns the process group of pid from /proc/<pid>/stat.
func getpgid(pid int) (int, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	// After "pid (comm) ": state ppid pgrp ...
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 3 {
		return 0, errors.New("malformed stat")
	}
	return strconv.Atoi(fields[2])
}

// ComponentStatus is the health of one recorded component.
type ComponentStatus struct {
	ComponentRecord
	// Alive reports whether its process runs.
	Alive bool `json:"alive"`
	// Ready reports whether its health URL answers 200. A component
	// without one is never reported ready: liveness is not readiness.
	Ready bool `json:"ready"`
	// Detail explains a component that is not ready.
	Detail string `json:"detail,omitempty"`
	// RSS is its resident memory in bytes.
	RSS int64 `json:"rss,omitempty"`
	// Election is, for a replica that elects a leader, RoleLeader or
	// RoleFollower (what its log says since it last started); empty for
	// a process that does not elect.
	Election string `json:"election,omitempty"`
}

// Election roles of a replicated process.
const (
	// RoleLeader is the replica that holds the Lease and reconciles.
	RoleLeader = "leader"
	// RoleFollower is a replica waiting for the Lease.
	RoleFollower = "follower"
)

// ClusterStatus is the readiness of a Karmada member cluster.
type ClusterStatus struct {
	ClusterRecord
	// Ready reports the Cluster's Ready condition.
	Ready bool `json:"ready"`
	// Reason and Message come from the Ready condition, or say why it
	// could not be read.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Partitioned reports that `compute-local partition` cut the city off
	// from the hub and the projects.
	Partitioned bool `json:"partitioned,omitempty"`
	// PartitionedUntil is when a timed partition heals by itself.
	PartitionedUntil time.Time `json:"partitionedUntil,omitzero"`
}

// Problem is one thing that keeps the platform from being healthy.
type Problem struct {
	// Name is the component, the cluster or the city.
	Name string `json:"name"`
	// What is skipped, not running, not ready, stopped, partitioned or
	// unreachable.
	What string `json:"what"`
	// Detail says why, and what to do.
	Detail string `json:"detail,omitempty"`
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// String renders "name: what (detail)".
func (p Problem) String() string {
	if p.Detail == "" {
		return p.Name + ": " + p.What
	}
	return p.Name + ": " + p.What + " (" + firstLine(p.Detail) + ")"
}

// Kinds of Problem.
const (
	ProblemSkipped      = "skipped"
	ProblemNotRunning   = "not running"
	ProblemStopped      = "stopped by compute-local stop"
	ProblemNotReady     = "not ready"
	ProblemPartitioned  = "partitioned"
	ProblemNotReadyCl   = "cluster not Ready"
	ProblemNotReadyNode = "node not Ready"
	ProblemStarting     = "still starting"
)

// StatusReport is what `compute-local status` shows.
type StatusReport struct {
	// Dir is the state directory.
	Dir string `json:"dir"`
	// StartedAt is when the platform was started.
	StartedAt time.Time `json:"startedAt"`
	// Starting reports a platform whose Up has not finished.
	Starting bool `json:"starting,omitempty"`
	// Components are the recorded processes.
	Components []ComponentStatus `json:"components"`
	// Clusters are the Karmada member clusters.
	Clusters []ClusterStatus `json:"clusters"`
	// Nodes are the cells' real nodes.
	Nodes []NodeStatus `json:"nodes,omitempty"`
	// Registry is the local OCI registry's host:port.
	Registry string `json:"registry,omitempty"`
	// Skipped are the components that were not started.
	Skipped []SkippedRecord `json:"skipped,omitempty"`
	// Planes are the planes with their kubeconfigs.
	Planes []PlaneRecord `json:"planes"`
	// RSS is the total resident memory of the platform in bytes.
	RSS int64 `json:"rss"`
	// Problems names every component that is skipped, not running or not
	// ready, every partitioned city and every Cluster that is not Ready.
	Problems []Problem `json:"problems,omitempty"`
	// OK reports that there are no problems: every component started and
	// ready, every Cluster Ready, no city partitioned.
	OK bool `json:"ok"`
	// IdentityTokensExpire is when the identity tokens of the overlay mode
	// expire unless refreshed; zero in the admin mode.
	IdentityTokensExpire time.Time `json:"identityTokensExpire,omitzero"`
	// IdentityTokensRefreshed says whether they are refreshed: they are
	// when the kubeconfigs name token files the state records.
	IdentityTokensRefreshed bool `json:"identityTokensRefreshed,omitempty"`
}

// Status checks every component recorded in dir and every Karmada Cluster.
func Status(ctx context.Context, dir string) (*StatusReport, error) {
	st, err := ReadState(dir)
	if err != nil {
		return nil, err
	}
	pr, err := stateProber(dir)
	if err != nil {
		return nil, err
	}
	r := &StatusReport{Dir: st.Dir, StartedAt: st.StartedAt, Starting: st.ReadyAt.IsZero(), Skipped: st.Skipped, Planes: st.Planes,
		IdentityTokensExpire: st.IdentityTokensExpire, IdentityTokensRefreshed: len(st.IdentityTokens) > 0}
	r.Components = make([]ComponentStatus, len(st.Components))
	var wg sync.WaitGroup
	for i, c := range st.Components {
		wg.Go(func() { r.Components[i] = componentStatus(ctx, pr, c) })
	}
	wg.Wait()
	for _, c := range r.Components {
		r.RSS += c.RSS
	}
	r.Clusters = clusterStatuses(ctx, st)
	markPartitions(ctx, st, r.Clusters)
	r.Nodes, r.Registry = nodeStatuses(ctx, st), st.Registry
	r.Problems = problems(r)
	r.OK = len(r.Problems) == 0
	return r, nil
}

// problems lists what keeps the platform from being healthy, in the
// report's order: start-up, skipped components, components, clusters.
func problems(r *StatusReport) []Problem {
	var out []Problem //nolint:prealloc // most reports have no problems: nothing to allocate
	if r.Starting {
		out = append(out, Problem{Name: "platform", What: ProblemStarting, Detail: "compute-local up has not finished"})
	}
	for _, s := range r.Skipped {
		if s.Chosen() {
			continue
		}
		out = append(out, Problem{Name: s.Name, What: ProblemSkipped, Detail: s.Reason})
	}
	for _, c := range r.Components {
		switch {
		case c.Stopped && !c.Alive:
			out = append(out, Problem{Name: c.Name, What: ProblemStopped, Detail: "start it with `compute-local start " + c.Name + "`"})
		case !c.Alive:
			out = append(out, Problem{Name: c.Name, What: ProblemNotRunning, Detail: c.Detail})
		case !c.Ready:
			out = append(out, Problem{Name: c.Name, What: ProblemNotReady, Detail: c.Detail})
		}
	}
	for _, n := range r.Nodes {
		if !n.Ready {
			out = append(out, Problem{Name: n.Name, What: ProblemNotReadyNode, Detail: strings.TrimSpace(n.Reason + " " + n.Message)})
		}
	}
	for _, c := range r.Clusters {
		switch {
		case c.Partitioned:
			out = append(out, Problem{Name: c.City, What: ProblemPartitioned, Detail: "heal it with `compute-local heal " + c.City + "`"})
		case !c.Ready:
			out = append(out, Problem{Name: c.Name, What: ProblemNotReadyCl, Detail: strings.TrimSpace(c.Reason + " " + c.Message)})
		}
	}
	return out
}

// componentStatus checks one component.
func componentStatus(ctx context.Context, pr *prober, c ComponentRecord) ComponentStatus {
	s := ComponentStatus{ComponentRecord: c, Alive: owned(c)}
	if !s.Alive {
		s.Detail = "not running; see " + c.Log
		return s
	}
	s.RSS, _ = RSSBytes(c.PID)
	if electsLeader(c) {
		s.Election = RoleFollower
		if leads(c) {
			s.Election = RoleLeader
		}
	}
	if c.Health == "" {
		s.Detail = "it has no health endpoint, so its readiness is unknown"
		return s
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ok, err := pr.probe(ctx, c.Health, c.HealthSelfSigned)
	s.Ready = ok
	if err != nil {
		s.Detail = err.Error()
	}
	return s
}

// clusterStatuses reads every recorded Cluster's Ready condition from the
// hub.
func clusterStatuses(ctx context.Context, st *State) []ClusterStatus {
	out := make([]ClusterStatus, 0, len(st.Clusters))
	fail := func(reason string) []ClusterStatus {
		for _, c := range st.Clusters {
			out = append(out, ClusterStatus{ClusterRecord: c, Reason: "Unreachable", Message: reason})
		}
		return out
	}
	hub, err := st.Plane(HubPlane)
	if err != nil {
		return fail(err.Error())
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", hub.Kubeconfig)
	if err != nil {
		return fail(err.Error())
	}
	cfg.Timeout = 5 * time.Second
	c, err := clientFor(cfg)
	if err != nil {
		return fail(err.Error())
	}
	list := &clusterv1alpha1.ClusterList{}
	if err := c.List(ctx, list); err != nil {
		return fail("cannot list Karmada clusters in the hub: " + err.Error())
	}
	for _, rec := range st.Clusters {
		s := ClusterStatus{ClusterRecord: rec, Reason: "NotFound", Message: "the Cluster is not registered in the hub"}
		for _, cl := range list.Items {
			if cl.Name != rec.Name {
				continue
			}
			s.Reason, s.Message = "Unknown", "no Ready condition yet"
			if cond := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ClusterConditionReady); cond != nil {
				s.Ready = cond.Status == "True"
				s.Reason, s.Message = cond.Reason, cond.Message
			}
		}
		out = append(out, s)
	}
	return out
}

// markPartitions marks the partitioned cities in clusters; a proxy that
// does not answer is already a problem of its own component.
func markPartitions(ctx context.Context, st *State, clusters []ClusterStatus) {
	fc, err := faults.NewClient(st.FaultControl)
	if err != nil {
		return
	}
	parts, err := fc.Partitions(ctx)
	if err != nil {
		return
	}
	for i := range clusters {
		for _, p := range parts {
			if p.City == clusters[i].City {
				clusters[i].Partitioned, clusters[i].PartitionedUntil = true, p.Until
			}
		}
	}
}
