package scale

import (
	"testing"

	"github.com/citycells/compute/internal/cli/cmdutil"
)

func TestScaleFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args     []string
		wantCode int
	}{
		"a name and --min":          {[]string{"web", "--min", "3"}, cmdutil.ExitOK},
		"zero is allowed":           {[]string{"web", "--min", "0"}, cmdutil.ExitOK},
		"one city":                  {[]string{"web", "--min", "3", "--city", "dfw"}, cmdutil.ExitOK},
		"--min is required":         {[]string{"web"}, cmdutil.ExitUsage},
		"a negative --min is usage": {[]string{"web", "--min", "-1"}, cmdutil.ExitUsage},
		"more than 1000 is usage":   {[]string{"web", "--min", "1001"}, cmdutil.ExitUsage},
		"--min must be a number":    {[]string{"web", "--min", "three"}, cmdutil.ExitUsage},
		"a bad city is usage":       {[]string{"web", "--min", "1", "--city", "Dallas"}, cmdutil.ExitUsage},
		"no name is usage":          {[]string{"--min", "1"}, cmdutil.ExitUsage},
		"--replicas is --min":       {[]string{"web", "--replicas", "3"}, cmdutil.ExitOK},
		"not both":                  {[]string{"web", "--replicas", "3", "--min", "3"}, cmdutil.ExitUsage},
		"--dry-run=server":          {[]string{"web", "--min", "3", "--dry-run=server"}, cmdutil.ExitOK},
		"--dry-run=later is usage":  {[]string{"web", "--min", "3", "--dry-run=later"}, cmdutil.ExitUsage},
	} {
		t.Run(name, func(t *testing.T) {
			c, o := newCommand(&cmdutil.Factory{})
			if got := cmdutil.ExitCode(cmdutil.Parse(c, o, tc.args)); got != tc.wantCode {
				t.Errorf("exit code %d, want %d", got, tc.wantCode)
			}
		})
	}
}
