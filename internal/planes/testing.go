package planes

import (
	"context"
	"strings"
	"testing"
)

// StartForTest starts an environment for one test and stops it in
// t.Cleanup. Progress goes to the test log unless opts.Log is set. When the
// test has failed, a directory Start created is kept, and its path logged,
// so the component logs can be read. A failure to start fails the test.
func StartForTest(t testing.TB, opts Options) *Environment {
	t.Helper()
	if opts.Log == nil {
		opts.Log = testLog{t}
	}
	env, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("failed to start planes: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() && env.ownsDir {
			env.keepDir = true
			t.Logf("planes: keeping %s for inspection", env.Dir())
		}
		env.Stop()
	})
	return env
}

// testLog writes progress lines to a test log.
type testLog struct {
	t testing.TB
}

// Write logs p as one line.
func (l testLog) Write(p []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
