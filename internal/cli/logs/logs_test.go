package logs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/citycells/compute/internal/cli/cmdutil"
)

func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	cmd, o := newCommand(&cmdutil.Factory{})
	return o, cmdutil.Parse(cmd, o, args)
}

func TestFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args    []string
		wantErr string
		check   func(*Options) string
	}{
		"a name alone reads everything once": {args: []string{"web"}, check: func(o *Options) string {
			return cmp.Diff(map[string]string{}, logRequest{tail: o.Tail}.params())
		}},
		"kubectl's flags map to the log API's parameters": {
			args: []string{"web", "-f", "--tail", "20", "--since", "90s", "--timestamps", "-c", "app", "--city", "dfw"},
			check: func(o *Options) string {
				req := logRequest{follow: o.Follow, tail: o.Tail, since: o.Since, timestamps: o.Timestamps, container: o.Container}
				want := map[string]string{"follow": "true", "tailLines": "20", "sinceSeconds": "90", "timestamps": "true", "container": "app"}
				return cmp.Diff(want, req.params()) + cmp.Diff("DFW", o.City)
			},
		},
		"no name is a usage error":             {args: []string{}, wantErr: "WORKLOAD|INSTANCE"},
		"two names are a usage error":          {args: []string{"a", "b"}, wantErr: "WORKLOAD|INSTANCE"},
		"a tail below -1 is refused":           {args: []string{"web", "--tail", "-2"}, wantErr: "--tail must be -1"},
		"a negative since is refused":          {args: []string{"web", "--since", "-1m"}, wantErr: "--since must be positive"},
		"no log requests at all is refused":    {args: []string{"web", "--max-log-requests", "0"}, wantErr: "--max-log-requests must be at least 1"},
		"previous and follow are refused":      {args: []string{"web", "--previous", "-f"}, wantErr: "cannot be combined"},
		"a city that is no city code is named": {args: []string{"web", "--city", "Dallas"}, wantErr: `--city "DALLAS"`},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := parse(t, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tc.wantErr)
				}
				if cmdutil.ExitCode(err) != cmdutil.ExitCode(cmdutil.UsageErrorf("x")) {
					t.Errorf("exit code %d, want the usage error's", cmdutil.ExitCode(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := tc.check(o); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// fakeSource serves instances and streams from memory; a stream of a
// followed instance stays open until its instance is replaced or removed.
type fakeSource struct {
	mu        sync.Mutex
	workloads map[string][]instanceRef
	logs      map[string]string // uid → its lines
	openErr   map[string]error  // name → the error of open
	opened    []logRequest
	live      map[string]chan struct{} // uid → closed when the instance goes
}

func (f *fakeSource) isWorkload(_ context.Context, name string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.workloads[name]
	return ok, nil
}

func (f *fakeSource) instances(_ context.Context, workload string) ([]instanceRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.workloads[workload]), nil
}

func (f *fakeSource) instance(_ context.Context, name string) (instanceRef, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, refs := range f.workloads {
		for _, r := range refs {
			if r.name == name {
				return r, true, nil
			}
		}
	}
	return instanceRef{}, false, nil
}

func (f *fakeSource) open(ctx context.Context, name string, req logRequest) (io.ReadCloser, error) {
	ref, found, _ := f.instance(ctx, name)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = append(f.opened, req)
	if err := f.openErr[name]; err != nil {
		return nil, err
	}
	if !found {
		return nil, errors.New("not found")
	}
	body := f.logs[ref.uid]
	if !req.follow {
		return io.NopCloser(strings.NewReader(body)), nil
	}
	pr, pw := io.Pipe()
	gone := f.live[ref.uid]
	go func() {
		_, _ = io.WriteString(pw, body)
		select {
		case <-gone:
		case <-ctx.Done():
		}
		_ = pw.Close()
	}()
	return pr, nil
}

// replace replaces instance name of workload w with a new one.
func (f *fakeSource) replace(w, name, newUID, lines string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.workloads[w] {
		if r.name == name {
			close(f.live[r.uid])
			f.workloads[w][i].uid = newUID
		}
	}
	f.logs[newUID] = lines
	f.live[newUID] = make(chan struct{})
}

func newFake() *fakeSource {
	return &fakeSource{
		workloads: map[string][]instanceRef{"web": {{"web-dfw-0", "DFW", "u1"}, {"web-lhr-0", "LHR", "u2"}}},
		logs:      map[string]string{"u1": "a1\na2\n", "u2": "b1\n"},
		openErr:   map[string]error{},
		live:      map[string]chan struct{}{"u1": make(chan struct{}), "u2": make(chan struct{})},
	}
}

// syncBuffer is a buffer written by several goroutines.
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

func options(src source, out, errOut io.Writer, args ...string) (*Options, error) {
	f := &cmdutil.Factory{Streams: cmdutil.IOStreams{IOStreams: genericiooptions.IOStreams{Out: out, ErrOut: errOut}}}
	cmd, o := newCommand(f)
	if err := cmdutil.Parse(cmd, o, args); err != nil {
		return nil, err
	}
	o.source, o.Retry = src, 10*time.Millisecond
	return o, nil
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(lines)
	return lines
}

func TestAWorkloadsInstancesAreInterleavedWithAPrefix(t *testing.T) {
	var out, errOut syncBuffer
	o, err := options(newFake(), &out, &errOut, "web")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"[web-dfw-0] a1", "[web-dfw-0] a2", "[web-lhr-0] b1"}
	if diff := cmp.Diff(want, sortedLines(out.String())); diff != "" {
		t.Error(diff)
	}
}

func TestOneInstanceHasNoPrefixAndTheCityMustMatch(t *testing.T) {
	var out, errOut syncBuffer
	o, _ := options(newFake(), &out, &errOut, "web-dfw-0")
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out.String() != "a1\na2\n" {
		t.Errorf("got %q", out.String())
	}
	o, _ = options(newFake(), &out, &errOut, "web-dfw-0", "--city", "LHR")
	if err := o.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "runs in DFW, not LHR") {
		t.Errorf("got %v", err)
	}
}

func TestFollowingMoreThanTheLimitIsRefused(t *testing.T) {
	var out, errOut syncBuffer
	o, _ := options(newFake(), &out, &errOut, "web", "-f", "--max-log-requests", "1")
	err := o.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "follow 2 log streams, but the maximum allowed concurrency is 1") {
		t.Errorf("got %v", err)
	}
}

func TestAFollowThatCannotStartFailsAtOnceWithTheServersWords(t *testing.T) {
	src := newFake()
	src.openErr["web-lhr-0"] = errors.New("city LHR is unreachable: its cell has not been heard from")
	var out, errOut syncBuffer
	o, _ := options(src, &out, &errOut, "web", "-f")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := o.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "instance web-lhr-0: city LHR is unreachable") {
		t.Fatalf("got %v", err)
	}
	if ctx.Err() != nil {
		t.Error("the follow hung until the deadline instead of failing at once")
	}
}

func TestAFollowFollowsTheReplacementAndSaysSo(t *testing.T) {
	src := newFake()
	var out, errOut syncBuffer
	o, _ := options(src, &out, &errOut, "web", "-f", "--tail", "5")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	waitFor(t, func() bool { return strings.Contains(out.String(), "b1") && strings.Contains(out.String(), "a2") })
	src.replace("web", "web-dfw-0", "u3", "c1\n")
	waitFor(t, func() bool { return strings.Contains(out.String(), "[web-dfw-0] c1") })
	if !strings.Contains(errOut.String(), "instance web-dfw-0 was replaced; following the new one") {
		t.Errorf("stderr: %q", errOut.String())
	}
	src.mu.Lock()
	src.workloads["web"] = append(src.workloads["web"], instanceRef{"web-sin-0", "SIN", "u4"})
	src.logs["u4"], src.live["u4"] = "d1\n", make(chan struct{})
	src.mu.Unlock()
	waitFor(t, func() bool { return strings.Contains(out.String(), "[web-sin-0] d1") })
	if !strings.Contains(errOut.String(), "following new instance web-sin-0") {
		t.Errorf("stderr: %q", errOut.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Ctrl-C should detach cleanly, got %v", err)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	var tails []int64
	for _, r := range src.opened {
		tails = append(tails, r.tail)
	}
	if diff := cmp.Diff([]int64{5, 5, -1, 5}, tails); diff != "" {
		t.Errorf("the first and new streams take --tail, a replacement its whole log: %s", diff)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
