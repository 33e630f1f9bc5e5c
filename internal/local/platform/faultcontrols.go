//go:build linux

package platform

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/citycells/compute/internal/local/faults"
	"github.com/citycells/compute/internal/planes"
)

// Fault controls: stop, start and restart any process of the platform, and
// partition a city (through the link proxy of internal/local/faults, whose
// links links.go plans). They work on a platform started by another
// process (`compute-local stop ...` against a detached `up`) through the
// state file, and on one started in this process (the e2e harness) through
// its Platform, which keeps the same records.

// StopOptions say how to stop a component.
type StopOptions struct {
	// Kill sends SIGKILL at once, like a crash; otherwise SIGTERM, then
	// SIGKILL after a grace period, like an operator.
	Kill bool
}

// findComponent returns the index of the recorded component called name.
func findComponent(st *State, name string) (int, error) {
	i := slices.IndexFunc(st.Components, func(c ComponentRecord) bool { return c.Name == name })
	if i >= 0 {
		return i, nil
	}
	names := make([]string, 0, len(st.Components))
	for _, c := range st.Components {
		names = append(names, c.Name)
	}
	return -1, fmt.Errorf("no component %q: choose one of %s (as `compute-local status` lists them)", name, strings.Join(names, ", "))
}

// stopRecord stops a recorded component's process group.
func stopRecord(c ComponentRecord, o StopOptions) error {
	if !owned(c) {
		return nil
	}
	if o.Kill {
		_ = syscall.Kill(-c.PID, syscall.SIGKILL)
		if waitUntil(func() bool { return syscall.Kill(c.PID, 0) != nil || zombie(c.PID) }) {
			return nil
		}
		return fmt.Errorf("%s (pid %d) still runs after SIGKILL", c.Name, c.PID)
	}
	if err := stopGroup(c.PID); err != nil {
		return fmt.Errorf("%s (pid %d): %w", c.Name, c.PID, err)
	}
	return nil
}

// spawnDetached starts a recorded component again as a process of its own
// that outlives the caller, its output appended to its log.
func spawnDetached(c ComponentRecord) (int, error) {
	if len(c.Args) == 0 {
		return 0, fmt.Errorf("the state records no command line for %s (started by an older compute-local): restart the platform with `compute-local down` and `compute-local up`", c.Name)
	}
	f, err := os.OpenFile(c.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("failed to open the log of %s: %w", c.Name, err)
	}
	defer func() { _ = f.Close() }()
	_, _ = fmt.Fprintf(f, "=== %s %s (compute-local start)\n", time.Now().Format(time.RFC3339), strings.Join(c.Args, " "))
	cmd := exec.Command(c.Args[0], c.Args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("failed to start %s: %w", c.Name, err)
	}
	pid := cmd.Process.Pid
	// Reaped by init once this command exits; until then, by Wait.
	go func() { _ = cmd.Wait() }()
	return pid, nil
}

// waitHealthy waits until a component's health URL answers 200.
func waitHealthy(ctx context.Context, pr *prober, c ComponentRecord, timeout time.Duration) error {
	if c.Health == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if !owned(c) {
			return fmt.Errorf("%s exited after starting; last lines of %s:\n%s", c.Name, c.Log, tailLines(c.Log, 15))
		}
		ok, err := pr.probe(ctx, c.Health, c.HealthSelfSigned)
		if ok {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s is not ready after %s (%w); see %s", c.Name, timeout, last, c.Log)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// StopRecordedComponent stops one component of the platform recorded in
// dir and records that it was stopped on purpose.
func StopRecordedComponent(dir, name string, o StopOptions) (ComponentRecord, error) {
	st, i, unlock, err := lockComponent(dir, name)
	if err != nil {
		return ComponentRecord{}, err
	}
	defer unlock()
	if err := stopRecord(st.Components[i], o); err != nil {
		return st.Components[i], err
	}
	st.Components[i].Stopped = true
	return st.Components[i], st.write()
}

// StartRecordedComponent starts a stopped (or crashed) component of the
// platform recorded in dir with its recorded command line and waits until
// it is ready. A component that runs is left alone.
func StartRecordedComponent(ctx context.Context, dir, name string, timeout time.Duration) (ComponentRecord, error) {
	st, i, unlock, err := lockComponent(dir, name)
	if err != nil {
		return ComponentRecord{}, err
	}
	defer unlock()
	c := st.Components[i]
	if owned(c) {
		return c, nil
	}
	pid, err := spawnDetached(c)
	if err != nil {
		return c, err
	}
	c.PID, c.Stopped = pid, false
	st.Components[i] = c
	if err := st.write(); err != nil {
		return c, err
	}
	pr, err := stateProber(dir)
	if err != nil {
		return c, err
	}
	return c, waitHealthy(ctx, pr, c, timeout)
}

// lockComponent takes the state directory's lock, waiting for another
// command that holds it (a second fault control; `up` holds it while it
// starts), and reads the state and the index of the component called name
// in it. The caller unlocks once it has written the state.
func lockComponent(dir, name string) (*State, int, func(), error) {
	unlock, err := lockDir(dir, true)
	if err != nil {
		return nil, 0, nil, err
	}
	st, err := ReadState(dir)
	if err != nil {
		unlock()
		return nil, 0, nil, err
	}
	i, err := findComponent(st, name)
	if err != nil {
		unlock()
		return nil, 0, nil, err
	}
	return st, i, unlock, nil
}

// stateProber returns a prober trusting the platform CA of dir.
func stateProber(dir string) (*prober, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("failed to read the platform CA: %w", err)
	}
	return newProber(caPEM)
}

// StopComponent stops one component of a platform started in this process
// (the e2e harness's fault control).
func (p *Platform) StopComponent(name string, o StopOptions) error {
	st := p.State()
	i, err := findComponent(&st, name)
	if err != nil {
		return err
	}
	if err := stopRecord(st.Components[i], o); err != nil {
		return err
	}
	p.mu.Lock()
	p.state.Components[i].Stopped = true
	p.mu.Unlock()
	return p.saveState()
}

// StartComponent starts a stopped or crashed component of a platform
// started in this process with its recorded command line, as a child of
// this process like the rest, and waits until it is ready.
func (p *Platform) StartComponent(ctx context.Context, name string) error {
	st := p.State()
	i, err := findComponent(&st, name)
	if err != nil {
		return err
	}
	c := st.Components[i]
	if owned(c) {
		return nil
	}
	if len(c.Args) == 0 {
		return fmt.Errorf("no command line recorded for %s", name)
	}
	health := c
	proc, err := p.env.StartComponent(ctx, planes.ComponentSpec{
		Name: c.Name, Plane: c.Plane, Binary: c.Args[0], Args: c.Args[1:], Port: c.Port, Timeout: p.cfg.Timeout,
		Ready: func(ctx context.Context) (bool, error) {
			if health.Health == "" {
				return true, nil
			}
			return p.prober.probe(ctx, health.Health, health.HealthSelfSigned)
		},
	})
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.state.Components[i].PID, p.state.Components[i].Stopped = proc.PID, false
	p.mu.Unlock()
	return p.saveState()
}

// RestartComponent stops a component and starts it again.
func (p *Platform) RestartComponent(ctx context.Context, name string, o StopOptions) error {
	if err := p.StopComponent(name, o); err != nil {
		return err
	}
	return p.StartComponent(ctx, name)
}

// Partition cuts city off from the hub and the projects for d (until Heal
// when d is 0); the cell keeps running. mode is faults.PartitionHang or
// faults.PartitionDrop.
func (p *Platform) Partition(ctx context.Context, city string, d time.Duration, mode string) error {
	st := p.State()
	fc, err := faults.NewClient(st.FaultControl)
	if err != nil {
		return err
	}
	_, err = fc.Partition(ctx, strings.ToUpper(city), d, mode)
	return err
}

// Heal reconnects a partitioned city.
func (p *Platform) Heal(ctx context.Context, city string) error {
	st := p.State()
	fc, err := faults.NewClient(st.FaultControl)
	if err != nil {
		return err
	}
	_, err = fc.Heal(ctx, strings.ToUpper(city))
	return err
}
