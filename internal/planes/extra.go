package planes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// tierComponent stops extra components (StartComponent) first: they are
// clients of the planes, like the controller managers.
const tierComponent = tierControllerManager + 1

// ComponentSpec describes a process that is not part of a plane — a Karmada
// component, compute-manager — which the Environment starts like its own
// processes (own process group, Pdeathsig unless detached, log file under
// <dir>/logs), records in Processes and stops first in Stop.
type ComponentSpec struct {
	// Name identifies the process and names its log file,
	// <dir>/logs/<Name>.log.
	Name string
	// Plane is the plane the component serves, for the records; may be
	// empty.
	Plane string
	// Binary is the path of the executable.
	Binary string
	// Args are its command line arguments, without the binary.
	Args []string
	// Port is the main port it serves on, for the records; 0 for none.
	Port int
	// Ready is polled until it reports true; its errors are transient and
	// the last one is reported if waiting times out. Nil means the
	// component is ready once started.
	Ready func(ctx context.Context) (bool, error)
	// Timeout bounds the wait for Ready; zero means Options.Timeout.
	Timeout time.Duration
}

// StartComponent starts a process in the environment and waits until
// spec.Ready reports true. If the process exits first, or does not become
// ready in time, it is stopped and the error names it with the tail of its
// log. A component that started stays recorded and is stopped by Stop.
func (e *Environment) StartComponent(ctx context.Context, spec ComponentSpec) (Process, error) {
	if spec.Name == "" || strings.ContainsAny(spec.Name, `/\`) {
		return Process{}, fmt.Errorf("invalid component name %q", spec.Name)
	}
	if spec.Binary == "" {
		return Process{}, fmt.Errorf("component %s has no binary", spec.Name)
	}
	started := time.Now()
	proc, err := e.launch(launchSpec{
		name:   spec.Name,
		plane:  spec.Plane,
		port:   spec.Port,
		binary: spec.Binary,
		args:   spec.Args,
	}, tierComponent)
	if err != nil {
		return Process{}, err
	}
	if spec.Ready != nil {
		timeout := spec.Timeout
		if timeout <= 0 {
			timeout = e.timeout
		}
		if err := waitFor(ctx, proc, timeout, spec.Ready); err != nil {
			_ = proc.stop()
			e.drop(proc)
			return Process{}, err
		}
	}
	e.logf("%s ready (%s)", spec.Name, since(started))
	return proc.info, nil
}

// StopAPIServer stops the kube-apiserver of the named plane, as an outage
// would; its controller manager keeps running and retrying. StartAPIServer
// starts it again on the same port.
func (e *Environment) StopAPIServer(plane string) error {
	p := e.Plane(plane)
	if p == nil {
		return fmt.Errorf("no plane named %q", plane)
	}
	proc := e.running(componentKubeAPIServer + "-" + plane)
	if proc == nil {
		return fmt.Errorf("the kube-apiserver of plane %s is not running", plane)
	}
	err := proc.stop()
	e.drop(proc)
	if err != nil {
		return err
	}
	e.logf("kube-apiserver %s stopped", plane)
	return nil
}

// StartAPIServer starts the kube-apiserver of a plane that StopAPIServer
// stopped, on the same port and with the same certificates and etcd prefix,
// and waits for /readyz.
func (e *Environment) StartAPIServer(ctx context.Context, plane string) error {
	p := e.Plane(plane)
	if p == nil {
		return fmt.Errorf("no plane named %q", plane)
	}
	if e.running(componentKubeAPIServer+"-"+plane) != nil {
		return fmt.Errorf("the kube-apiserver of plane %s is already running", plane)
	}
	if e.etcdURL == "" {
		return errors.New("the environment's etcd is not running")
	}
	return e.startAPIServer(ctx, p, p.port)
}

// running returns the live process named name, or nil.
func (e *Environment) running(name string) *process {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range e.procs {
		if p.info.Name == name && !p.exited() {
			return p
		}
	}
	return nil
}

// drop removes a stopped process from the records; stop has closed its log.
func (e *Environment) drop(p *process) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.procs = slices.DeleteFunc(e.procs, func(q *process) bool { return q == p })
}
