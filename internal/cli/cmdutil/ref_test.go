package cmdutil

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// recorder is a Runner and Resolver that records the steps RunE takes.
type recorder struct {
	invalid bool
	steps   []string
}

func (r *recorder) Complete(*cobra.Command, []string) error {
	r.steps = append(r.steps, "complete")
	return nil
}

func (r *recorder) Validate() error {
	r.steps = append(r.steps, "validate")
	if r.invalid {
		return UsageErrorf("bad flag")
	}
	return nil
}

func (r *recorder) Resolve(context.Context) error {
	r.steps = append(r.steps, "resolve")
	return nil
}

func (r *recorder) Run(context.Context) error {
	r.steps = append(r.steps, "run")
	return nil
}

func TestRunEResolvesBetweenValidateAndRun(t *testing.T) {
	for name, tc := range map[string]struct {
		invalid bool
		want    string
	}{
		"valid options are resolved, then run":           {false, "complete validate resolve run"},
		"a usage error stops before the server is asked": {true, "complete validate"},
	} {
		t.Run(name, func(t *testing.T) {
			r := &recorder{invalid: tc.invalid}
			cmd := &cobra.Command{}
			cmd.SetContext(context.Background())
			_ = RunE(r)(cmd, nil)
			if got := strings.Join(r.steps, " "); got != tc.want {
				t.Errorf("steps %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseNeverResolves(t *testing.T) {
	r := &recorder{}
	if err := Parse(&cobra.Command{}, r, nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.steps, " "); got != "complete validate" {
		t.Errorf("steps %q", got)
	}
}

func TestWaitFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args     []string
		wantWait bool
		wantCode int
	}{
		"the default timeout":       {nil, false, ExitOK},
		"--wait with a timeout":     {[]string{"--wait", "--timeout", "2m"}, true, ExitOK},
		"a zero timeout is usage":   {[]string{"--timeout", "0s"}, false, ExitUsage},
		"a negative one is usage":   {[]string{"--timeout", "-1m"}, false, ExitUsage},
		"a timeout must be a value": {[]string{"--timeout", "soon"}, false, ExitUsage},
	} {
		t.Run(name, func(t *testing.T) {
			w := NewWaitFlags(5 * time.Minute)
			cmd := &cobra.Command{}
			w.AddFlags(cmd, "Wait.")
			err := cmd.ParseFlags(tc.args)
			if err != nil {
				err = UsageErrorf("%v", err)
			} else {
				err = w.Validate()
			}
			if got := ExitCode(err); got != tc.wantCode || (err == nil && w.Wait != tc.wantWait) {
				t.Errorf("exit %d (%v), wait %v; want exit %d, wait %v", got, err, w.Wait, tc.wantCode, tc.wantWait)
			}
		})
	}
}
