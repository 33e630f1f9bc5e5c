package planes

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// TestComponentsAndAPIServerRestart checks what the local platform builds
// on: extra components are recorded and stopped with the environment, and a
// plane's apiserver can be stopped and started again on the same port.
func TestComponentsAndAPIServerRestart(t *testing.T) {
	env := StartForTest(t, Options{Planes: []PlaneSpec{{Name: "cell"}}})
	ctx := t.Context()

	sleeper, err := env.StartComponent(ctx, ComponentSpec{Name: "sleeper", Plane: "cell", Binary: "/bin/sleep", Args: []string{"600"}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range env.Processes() {
		found = found || (p.Name == "sleeper" && p.PID == sleeper.PID && p.Plane == "cell")
	}
	if !found {
		t.Errorf("the component is not among the processes: %+v", env.Processes())
	}

	_, err = env.StartComponent(ctx, ComponentSpec{
		Name: "never-ready", Binary: "/bin/sleep", Args: []string{"600"}, Timeout: 300 * time.Millisecond,
		Ready: func(context.Context) (bool, error) { return false, errors.New("not yet") },
	})
	if err == nil || !strings.Contains(err.Error(), "never-ready is not ready") || !strings.Contains(err.Error(), "not yet") {
		t.Errorf("a component that never gets ready: %v", err)
	}
	for _, p := range env.Processes() {
		if p.Name == "never-ready" {
			t.Errorf("a component that failed to start is still recorded (pid %d)", p.PID)
		}
	}

	plane := env.Plane("cell")
	cs := kubernetes.NewForConfigOrDie(plane.Config())
	if err := env.StopAPIServer("cell"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Discovery().ServerVersion(); err == nil {
		t.Error("the stopped apiserver still answers")
	}
	if err := env.StopAPIServer("cell"); err == nil {
		t.Error("stopping a stopped apiserver succeeds")
	}
	if err := env.StartAPIServer(ctx, "cell"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Errorf("the restarted apiserver does not answer on %s: %v", plane.URL(), err)
	}

	env.Stop()
	if err := syscall.Kill(sleeper.PID, 0); err == nil {
		t.Errorf("the component (pid %d) survived Stop", sleeper.PID)
	}
}
