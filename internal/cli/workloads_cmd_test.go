package cli_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/citycells/compute/internal/cli/clitest"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

func TestWorkloadsListsWhatTheUserDeployed(t *testing.T) {
	t.Parallel()
	h := harness(t)

	empty := h.Run(main, clitest.RunOptions{}, "workloads")
	if empty.Code != 0 || empty.Stdout != "" || !strings.Contains(empty.Stderr, "No workloads found in namespace "+h.Namespace) {
		t.Fatalf("an empty namespace should say so on stderr only: %+v", empty)
	}

	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.Converge("web", clitest.World{"LHR": {clitest.Available, clitest.QuotaExceeded}})
	h.CreateWorkload(clitest.NewWorkload("api").Placement("default", 1, "SIN").Build())

	res := h.Run(main, clitest.RunOptions{Terminal: true, Width: 120}, "workloads")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("want a header and two rows, got:\n%s", res.Stdout)
	}
	if !strings.Contains(lines[1], "api") || !strings.Contains(lines[1], "SIN") || !strings.Contains(lines[1], "Pending") {
		t.Errorf("api has no status yet: %q", lines[1])
	}
	for _, want := range []string{"web", "DFW,LHR", "3/4", "4", "Yes"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("web row %q lacks %q", lines[2], want)
		}
	}

	piped := h.Run(main, clitest.RunOptions{}, "workloads")
	if !strings.Contains(piped.Stdout, "web\tDFW,LHR\t3/4\t4\tYes\t") {
		t.Errorf("a pipe gets tab-separated values:\n%s", piped.Stdout)
	}

	js := h.Run(main, clitest.RunOptions{}, "workloads", "-o", "json")
	if js.Code != 0 || !strings.Contains(js.Stdout, `"kind": "WorkloadList"`) || !strings.Contains(js.Stdout, `"name": "web"`) {
		t.Errorf("-o json prints the list: %s %s", js.Stdout, js.Stderr)
	}
}

func TestListsFollowKubectlsConventions(t *testing.T) {
	t.Parallel()
	h := harness(t)
	team := h.Namespace // a label value no other test uses
	web := clitest.NewWorkload("web").Build()
	web.Labels = map[string]string{"team": team}
	h.CreateWorkload(web)
	h.CreateWorkload(clitest.NewWorkload("api").Placement("default", 1, "SIN").Build())
	h.Converge("web", nil)

	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"-o name prints kind/name":                   {[]string{"workloads", "-o", "name"}, "workload.compute.datumapis.com/api\nworkload.compute.datumapis.com/web\n"},
		"-o jsonpath picks fields":                   {[]string{"workloads", "-o", "jsonpath={.items[*].metadata.name}"}, "api web"},
		"-o go-template ranges over items":           {[]string{"workloads", "-o", "go-template={{range .items}}{{.metadata.name}};{{end}}"}, "api;web;"},
		"-l filters by label":                        {[]string{"workloads", "-l", "team=" + team, "-o", "name"}, "workload.compute.datumapis.com/web\n"},
		"-A with -l finds it from anywhere":          {[]string{"workloads", "-A", "-l", "team=" + team, "--no-headers", "-n", "default"}, h.Namespace + "\tweb\tDFW,LHR\t4/4\t4\tYes\t"},
		"--no-headers leaves the header out":         {[]string{"workloads", "--no-headers"}, "api\tSIN\t0/1\t0\tPending\t"},
		"instances take -l and -o name too":          {[]string{"instances", "-l", "compute.datumapis.com/city-code=LHR", "-o", "name"}, "instance.compute.datumapis.com/web-"},
		"-o wide adds the quota and network columns": {[]string{"instances", "--workload", "web", "-o", "wide"}, "\tPLACEMENT\tQUOTA\tNETWORK-IP\tEXTERNAL-IP\n"},
		"a view takes jsonpath":                      {[]string{"status", "web", "-o", "jsonpath={.name}"}, "web"},
		"instance ages are relative in a pipe":       {[]string{"instances", "--workload", "web", "--no-headers"}, "s\tAvailable\n"},
	} {
		t.Run(name, func(t *testing.T) {
			res := h.Run(main, clitest.RunOptions{}, tc.args...)
			if res.Code != cmdutil.ExitOK || !strings.Contains(res.Stdout, tc.want) {
				t.Errorf("%v: exit %d, stdout lacks %q:\n%s%s", tc.args, res.Code, tc.want, res.Stdout, res.Stderr)
			}
			if slices.Contains(tc.args, "--no-headers") && strings.Contains(res.Stdout, "NAME") {
				t.Errorf("--no-headers printed a header:\n%s", res.Stdout)
			}
		})
	}
	for _, args := range [][]string{{"status", "web", "-o", "name"}, {"workloads", "-l", "team in (a"}, {"workloads", "-o", "jsonpath={.items["}} {
		if res := h.Run(main, clitest.RunOptions{}, args...); res.Code != cmdutil.ExitUsage {
			t.Errorf("%v: exit %d, want a usage error:\n%s", args, res.Code, res.Stderr)
		}
	}
}

func TestFlagsCompleteFromTheProject(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.BindCities("DFW", "LHR")
	h.CreateWorkload(clitest.NewWorkload("web").AddPlacement("edge", 1, "LHR").Build())
	for name, tc := range map[string]struct {
		args []string
		want []string
	}{
		"--city offers the enabled cities":         {[]string{"deploy", "web", "--city", ""}, []string{"DFW", "LHR"}},
		"--city completes after a comma":           {[]string{"deploy", "web", "--city", "DFW,"}, []string{"DFW,LHR"}},
		"--city of scale too":                      {[]string{"scale", "web", "--city", "l"}, []string{"LHR"}},
		"--instance-type offers the catalog":       {[]string{"deploy", "web", "--instance-type", ""}, []string{"datumcloud/d1-standard-2"}},
		"--placement offers the workload's":        {[]string{"scale", "web", "--placement", ""}, []string{"default", "edge"}},
		"-n offers namespaces":                     {[]string{"workloads", "-n", h.Namespace[:4]}, []string{h.Namespace}},
		"--context offers the kubeconfig contexts": {[]string{"workloads", "--context", ""}, []string{clitest.ProjectPlane}},
		"--dry-run offers its values":              {[]string{"deploy", "web", "--dry-run="}, []string{"client", "server"}},
		"-o offers the formats, name for objects":  {[]string{"workloads", "-o", ""}, []string{"name", "jsonpath="}},
	} {
		t.Run(name, func(t *testing.T) {
			res := h.Run(main, clitest.RunOptions{}, append([]string{"__complete"}, tc.args...)...)
			got := strings.Split(res.Stdout, "\n")
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%v: candidates lack %q:\n%s", tc.args, w, res.Stdout)
				}
			}
		})
	}
}

func TestAWorkloadPrintedAsYAMLDeploysBackWithNoChange(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.BindCities("DFW", "LHR")
	deployed := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW,LHR",
		"--port", "http:8080", "--env", "MODE=prod", "--detach", "-y")
	if deployed.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", deployed.Code, deployed.Stderr)
	}
	h.Converge("web", nil)
	got := h.Run(main, clitest.RunOptions{}, "workloads", "web", "-o", "yaml")
	if got.Code != cmdutil.ExitOK || !strings.Contains(got.Stdout, "kind: Workload\n") {
		t.Fatalf("exit %d:\n%s%s", got.Code, got.Stdout, got.Stderr)
	}
	back := h.Run(main, clitest.RunOptions{Stdin: got.Stdout}, "deploy", "-f", "-", "--detach", "-y")
	if back.Code != cmdutil.ExitOK || !strings.Contains(back.Stdout, "web is up to date: nothing to deploy.") {
		t.Errorf("deploy -f of what workloads -o yaml printed should change nothing; exit %d:\n%s%s", back.Code, back.Stdout, back.Stderr)
	}
}
