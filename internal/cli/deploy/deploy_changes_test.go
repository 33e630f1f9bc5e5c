package deploy

import (
	"strings"
	"testing"
)

func TestTheFlagsGivenAreTheChanges(t *testing.T) {
	for name, tc := range map[string]struct {
		args                 []string
		want                 string
		container, placement bool
	}{
		"no workload flag changes nothing":  {[]string{"web", "--detach", "--timeout", "1m"}, "", false, false},
		"an image changes the container":    {[]string{"web", "--image", "x"}, "--image", true, false},
		"env changes the container":         {[]string{"web", "--env", "A=1"}, "--env", true, false},
		"a default given is still a change": {[]string{"web", "--min", "1"}, "--min", false, true},
		"cities and scale change the placement": {[]string{"web", "--max", "3", "--city", "DFW", "--policy", "Parallel"},
			"--city --max --policy", false, true},
		"an instance type is neither": {[]string{"web", "--instance-type", "datumcloud/d1-standard-2"}, "--instance-type", false, false},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := parse(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(o.changed.flags(), " "); got != tc.want {
				t.Errorf("flags %q, want %q", got, tc.want)
			}
			if o.touchesContainer() != tc.container || o.touchesPlacement() != tc.placement {
				t.Errorf("container %v placement %v, want %v %v", o.touchesContainer(), o.touchesPlacement(), tc.container, tc.placement)
			}
		})
	}
}
