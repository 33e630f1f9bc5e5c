package planes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

const (
	// stopGrace is how long a process group gets between SIGTERM and SIGKILL.
	stopGrace = 5 * time.Second
	// logTailLines is how many log lines an error about a process carries.
	logTailLines = 20
	// pollInterval is how often readiness is probed.
	pollInterval = 100 * time.Millisecond
	// portAttempts bounds restarts of a process that lost a port race.
	portAttempts = 3
)

// Process describes one process an Environment started, so that callers
// (compute-local) can record and inspect it.
type Process struct {
	// Name identifies the component, e.g. "etcd", "kube-apiserver-project"
	// or "kube-controller-manager-project"; it is also the log file's name.
	Name string
	// Plane is the plane the process serves; empty for the shared etcd.
	Plane string
	// PID is the process id; the process leads its own process group.
	PID int
	// Port is the port it serves on: the client port of etcd, the secure
	// port of kube-apiserver, 0 for kube-controller-manager.
	Port int
	// PeerPort is etcd's peer port; 0 for other components.
	PeerPort int
	// LogPath is the file receiving the process's stdout and stderr.
	LogPath string
	// Args are the command line arguments, binary first.
	Args []string
}

// process is a running child with its exit status.
type process struct {
	info    Process
	cmd     *exec.Cmd
	logFile *os.File
	// done is closed when the process has exited and waitErr is set.
	done    chan struct{}
	waitErr error
	// logOffset is where this attempt's output starts in the log file.
	logOffset int64
	// tier orders Stop (see tierEtcd).
	tier int
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes how the process ended, with the tail of its log.
func (p *process) exitError() error {
	if p.waitErr == nil {
		return fmt.Errorf("%s exited during start (exit status 0); last lines of %s:\n%s",
			p.info.Name, p.info.LogPath, p.tail())
	}
	return fmt.Errorf("%s exited during start (%w); last lines of %s:\n%s",
		p.info.Name, p.waitErr, p.info.LogPath, p.tail())
}

// tail returns the last lines this attempt wrote to the log.
func (p *process) tail() string {
	return tailFile(p.info.LogPath, p.logOffset, logTailLines)
}

// stop terminates the process group gracefully, then forcibly, and waits
// for the process to be reaped.
func (p *process) stop() error {
	defer func() { _ = p.logFile.Close() }()
	if p.exited() {
		return nil
	}
	// A negative pid addresses the whole process group (Setpgid made the
	// child its leader), so helpers the component forked die with it.
	_ = syscall.Kill(-p.info.PID, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopGrace):
	}
	_ = syscall.Kill(-p.info.PID, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopGrace):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.info.Name, p.info.PID)
	}
}

// launchSpec describes a process to start.
type launchSpec struct {
	name     string
	plane    string
	port     int
	peerPort int
	binary   string
	args     []string
}

// launch starts a process with its output appended to <logDir>/<name>.log.
// With pdeathsig the kernel kills the child when the thread that started it
// dies, which is why children are started from the spawner's locked thread.
func launch(s launchSpec, logDir string, sp *spawner) (*process, error) {
	logPath := filepath.Join(logDir, s.name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open log for %s: %w", s.name, err)
	}
	offset, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("failed to open log for %s: %w", s.name, err)
	}
	_, _ = fmt.Fprintf(f, "=== %s %s %s\n", time.Now().Format(time.RFC3339), s.binary, strings.Join(s.args, " "))

	cmd := exec.Command(s.binary, s.args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if sp != nil {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		err = sp.start(cmd)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("failed to start %s: %w", s.name, err)
	}
	p := &process{
		info: Process{
			Name:     s.name,
			Plane:    s.plane,
			PID:      cmd.Process.Pid,
			Port:     s.port,
			PeerPort: s.peerPort,
			LogPath:  logPath,
			Args:     append([]string{s.binary}, s.args...),
		},
		cmd:       cmd,
		logFile:   f,
		done:      make(chan struct{}),
		logOffset: offset,
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitFor polls ready until it reports true, the process exits, ctx ends or
// timeout passes. ready's errors are transient; the last one is reported
// when waiting ends.
func waitFor(ctx context.Context, p *process, timeout time.Duration, ready func(context.Context) (bool, error)) error {
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	var lastErr error
	for {
		ok, err := ready(ctx)
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-p.done:
			return p.exitError()
		case <-ctx.Done():
			// A process that died while the probe ran is the better story.
			if p.exited() {
				return p.exitError()
			}
			probe := "no probe error"
			if lastErr != nil {
				probe = "last probe error: " + lastErr.Error()
			}
			return fmt.Errorf("%s is not ready after %s (%s: %w); last lines of %s:\n%s",
				p.info.Name, since(began), probe, ctx.Err(), p.info.LogPath, p.tail())
		case <-ticker.C:
		}
	}
}

// lostPortRace reports whether a process exited because a port it was given
// was taken between allocation and bind.
func lostPortRace(p *process) bool {
	return p.exited() && strings.Contains(p.tail(), "address already in use")
}

// FreePorts returns n distinct free loopback ports. The listeners are held
// until all ports are chosen, so the ports differ from each other; another
// program can still take one before our process binds it, which callers
// handle by restarting with new ports (see lostPortRace).
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("failed to find a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tailFile returns the last n lines of path from offset on.
func tailFile(path string, offset int64, n int) string {
	const maxRead = 64 << 10
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	start := max(offset, st.Size()-maxRead)
	buf := make([]byte, st.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + string(bytes.Join(lines, []byte("\n    ")))
}

// spawner starts processes from one goroutine locked to its OS thread.
// Pdeathsig fires when the thread that forked the child exits, not the
// process; a Go runtime thread can exit underneath an ordinary goroutine
// (golang/go#27505), so children are forked from a thread that lives until
// the Environment stops.
type spawner struct {
	reqs chan spawnRequest
	quit chan struct{}
}

type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan error
}

// newSpawner starts the locked goroutine.
func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnRequest), quit: make(chan struct{})}
	go func() {
		// Never unlocked: when this goroutine returns the thread exits,
		// which kills any child still alive (they have all been stopped by
		// then).
		runtime.LockOSThread()
		for {
			select {
			case r := <-s.reqs:
				r.errc <- r.cmd.Start()
			case <-s.quit:
				return
			}
		}
	}()
	return s
}

// start starts cmd on the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	select {
	case s.reqs <- spawnRequest{cmd: cmd, errc: errc}:
		return <-errc
	case <-s.quit:
		return errors.New("environment is stopping")
	}
}

// close ends the spawner's goroutine.
func (s *spawner) close() {
	close(s.quit)
}
