package cli_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"k8s.io/utils/clock"

	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/integration/fixtures/clilive"
)

// screen collects what a pseudo-terminal shows.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write records terminal output.
func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

// String returns everything shown so far.
func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits until the screen shows want.
func (s *screen) waitFor(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(s.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q; it shows:\n%q", want, s.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestInteractiveDeployAsksThenRendersLiveProgress(t *testing.T) {
	t.Parallel()
	// The real controllers roll it out: the simulated provider takes
	// clilive.ProviderDelay per instance, and OrderedReady starts a city's
	// instances one after the other, so progress frames render before the
	// rollout is done.
	h := live(t, clilive.Plenty)

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("no pseudo-terminal available (/dev/ptmx): %v", err)
	}
	defer func() { _ = ptmx.Close(); _ = tty.Close() }()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	var scr screen
	go func() { _, _ = io.Copy(&scr, ptmx) }()

	streams := cmdutil.FileIOStreams(tty, tty, tty)
	if !streams.InTerminal || !streams.OutTerminal || streams.Width != 120 {
		t.Fatalf("the pseudo-terminal is not seen as a terminal: %+v", streams)
	}
	f := &cmdutil.Factory{Streams: streams, Clock: clock.RealClock{}, Getenv: func(string) string { return "" },
		Build: cmdutil.BuildInfo{Version: "test"}, PollInterval: 100 * time.Millisecond,
		Kubeconfig: h.Kubeconfig, Namespace: h.Namespace, Project: h.Project}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := make(chan int, 1)
	go func() {
		code <- main(ctx, []string{"deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW,LHR", "--min", "2"}, f)
	}()

	scr.waitFor(t, "Deploy? [y/N]: ", 20*time.Second)
	if _, err := ptmx.Write([]byte("y\r")); err != nil {
		t.Fatal(err)
	}
	scr.waitFor(t, "web is rolled out", clilive.Settle)
	if c := <-code; c != cmdutil.ExitOK {
		t.Fatalf("exit %d:\n%s", c, scr.String())
	}

	out := scr.String()
	for _, want := range []string{
		"Create workload web in namespace " + h.Namespace, // the plan
		"Rolling out web",               // the live header
		"LHR  1/2  starting",            // a frame with progress
		"\x1b[",                         // redrawn in place
		"LHR  2/2  ready",               // the last frame
		"DFW 2/2 ready · LHR 2/2 ready", // the result
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal never showed %q:\n%q", want, out)
		}
	}
}
