package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
	"github.com/citycells/compute/test/integration/fixtures/clilive"
)

// syncBuffer is a buffer a command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// started is a command running in the background.
type started struct {
	out, errOut *syncBuffer
	done        chan int
}

// start runs args in the background with o, its output readable while it
// runs.
func start(h *clilive.Harness, o clitest.RunOptions, args ...string) *started {
	s := &started{out: &syncBuffer{}, errOut: &syncBuffer{}, done: make(chan int, 1)}
	adjust := o.Factory
	o.Factory = func(f *cmdutil.Factory) {
		if adjust != nil {
			adjust(f)
		}
		f.Streams.Out, f.Streams.ErrOut = s.out, s.errOut
	}
	go func() { s.done <- h.Run(main, o, args...).Code }()
	return s
}

// waitFor waits until the command has written want, or fails the test.
func (s *started) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the command never wrote %q:\n%s%s", want, s.out, s.errOut)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exit waits for the command to end and returns its exit code.
func (s *started) exit(t *testing.T) int {
	t.Helper()
	select {
	case code := <-s.done:
		return code
	case <-time.After(90 * time.Second):
		t.Fatalf("the command did not end:\n%s%s", s.out, s.errOut)
	}
	return -1
}

func TestRolloutStatusOutlivesAFiveSecondAPIServerOutage(t *testing.T) {
	// Not parallel: it stops the live plane's API server for 5 s (the
	// controllers and the garbage collector retry through the outage like
	// the command), and sequential tests run alone.
	h := live(t, clilive.Plenty)
	h.CreateWorkload(clitest.NewWorkload("web").Edit(clilive.Held).Build())
	h.Release("web", "LHR")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := start(h, clitest.RunOptions{Ctx: ctx}, "rollout", "status", "web", "--timeout", "4m")
	cmd.waitFor(t, "web: DFW 0/2")

	if err := env.StopAPIServer(clilive.Plane); err != nil {
		t.Fatal(err)
	}
	cmd.waitFor(t, "web: reconnecting…")
	time.Sleep(5 * time.Second)
	if err := env.StartAPIServer(ctx, clilive.Plane); err != nil {
		t.Fatal(err)
	}
	// The controllers' watches come back with client-go's backoff (up to
	// 30 s between attempts), slower on a loaded machine.
	h.Patience = 3 * time.Minute
	h.Release("web", "DFW")

	if code := cmd.exit(t); code != cmdutil.ExitOK {
		t.Fatalf("exit %d, want 0 once the rollout completes:\n%s%s", code, cmd.out, cmd.errOut)
	}
	mustContain(t, "the wait", cmd.out.String(), "web: reconnecting… (", "web is rolled out")
}

// tokens plays datumctl's credentials helper: every call mints the next
// token, tok-1, tok-2, ...
type tokens struct{ minted atomic.Int64 }

func (k *tokens) helper(context.Context, string, ...string) ([]byte, error) {
	return fmt.Appendf(nil, "tok-%d\n", k.minted.Add(1)), nil
}

func TestAWaitOutlivesAnExpiredToken(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		// accepted is the token the API accepts once tok-1 has expired.
		accepted string
		wantCode int
		want     string
	}{
		"a fresh token from the helper carries the wait on":  {"tok-2", cmdutil.ExitOK, "web is rolled out"},
		"a login that is gone ends it, saying how to log in": {"none", cmdutil.ExitFailure, "datumctl login"},
	} {
		t.Run(name, func(t *testing.T) {
			h := live(t, clilive.Plenty)
			h.CreateWorkload(clitest.NewWorkload("web").Edit(clilive.Held).Build())
			h.Release("web", "DFW")
			var valid atomic.Value
			valid.Store("tok-1")
			srv, _ := projectAPIAccepting(t, clilive.Plane, h.Project, func(tok string) bool { return tok == valid.Load() })
			var k tokens
			pluginEnv := map[string]string{
				cmdutil.EnvAPIHost: srv.URL, cmdutil.EnvProject: h.Project, cmdutil.EnvPluginAPIVersion: "1",
				cmdutil.EnvCredentialsHelper: "/usr/local/bin/datumctl",
			}
			cmd := start(h, clitest.RunOptions{Env: pluginEnv, Factory: func(f *cmdutil.Factory) {
				f.Kubeconfig, f.Run = "", k.helper
			}}, "rollout", "status", "web", "--timeout", "1m")
			cmd.waitFor(t, "LHR 0/2")

			// tok-1 expires; the open watches end with the connections.
			valid.Store(tc.accepted)
			srv.CloseClientConnections()
			if tc.wantCode == cmdutil.ExitOK {
				h.Release("web", "LHR")
			}
			code := cmd.exit(t)
			if code != tc.wantCode || !strings.Contains(cmd.out.String()+cmd.errOut.String(), tc.want) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s%s", code, tc.wantCode, tc.want, cmd.out, cmd.errOut)
			}
			if n := k.minted.Load(); tc.wantCode == cmdutil.ExitOK && n != 2 {
				t.Errorf("the helper minted %d tokens, want 2 (one at the start, one after the 401)", n)
			}
		})
	}
}

func TestInstancesWatchPrintsWhatChangesUntilCtrlC(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	h.CreateWorkload(clitest.NewWorkload("web").Placement("default", 1, "DFW", "LHR").Edit(clilive.Held).Build())
	h.Release("web", "DFW")
	ctx, interrupt := context.WithCancelCause(context.Background())
	defer interrupt(nil)
	cmd := start(h, clitest.RunOptions{Ctx: ctx}, "instances", "--workload", "web", "-w")
	cmd.waitFor(t, "   WORKLOAD   ")
	cmd.waitFor(t, "   LHR   ")
	cmd.waitFor(t, "Starting\n") // the held LHR instance

	h.Release("web", "LHR")
	available := regexp.MustCompile(`   LHR   [^\n]*   Available\n`)
	deadline := time.Now().Add(30 * time.Second)
	for !available.MatchString(cmd.out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("the LHR instance was not printed again when it became available:\n%s", cmd.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	interrupt(cmdutil.ErrInterrupted)
	if code := cmd.exit(t); code != cmdutil.ExitOK {
		t.Fatalf("Ctrl-C ends a watch normally; exit %d:\n%s%s", code, cmd.out, cmd.errOut)
	}
	if strings.Count(cmd.out.String(), "NAME ") != 1 {
		t.Errorf("the header is printed once:\n%s", cmd.out)
	}
}
