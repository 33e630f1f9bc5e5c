package cli_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
	"github.com/citycells/compute/test/integration/fixtures/clilive"
)

func TestWorkloadsListsWhatTheUserDeployed(t *testing.T) {
	t.Parallel()
	// A project with quota for 3 instances: web gets 3 of its 4, api none.
	h := live(t, clilive.Grant{Instances: 3, VCPUs: "400", Memory: "800Gi"})

	empty := h.Run(main, clitest.RunOptions{}, "workloads")
	if empty.Code != 0 || empty.Stdout != "" || !strings.Contains(empty.Stderr, "No workloads found in namespace "+h.Namespace) {
		t.Fatalf("an empty namespace should say so on stderr only: %+v", empty)
	}

	growIntoLHR(t, h, 2)
	waitQuotaExceeded(h, 1)
	h.CreateWorkload(clitest.NewWorkload("api").Placement("default", 1, "SIN").Build())

	var res clitest.Result
	var lines []string
	h.Eventually("the controllers report api", func(context.Context) error {
		res = h.Run(main, clitest.RunOptions{Terminal: true, Width: 120}, "workloads")
		lines = strings.Split(strings.TrimSpace(res.Stdout), "\n")
		if len(lines) != 3 || !strings.Contains(lines[1], "No (quota exceeded)") {
			return fmt.Errorf("exit %d:\n%s%s", res.Code, res.Stdout, res.Stderr)
		}
		return nil
	})
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	if !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("want a header and two rows, got:\n%s", res.Stdout)
	}
	for _, want := range []string{"api", "SIN", "0/1", "Failing"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("api row %q lacks %q", lines[1], want)
		}
	}
	// An instance the quota service denied was never created on the
	// runtime: 3 of web's 4 are up to date.
	for _, want := range []string{"web", "DFW,LHR", "3/4", "3", "Yes"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("web row %q lacks %q", lines[2], want)
		}
	}

	piped := h.Run(main, clitest.RunOptions{}, "workloads")
	if !strings.Contains(cells(piped.Stdout), "web\tDFW,LHR\t3/4\t3\tDegraded\tYes\t") {
		t.Errorf("a pipe gets the aligned table:\n%s", piped.Stdout)
	}
	if strings.Contains(piped.Stdout, "\t") {
		t.Errorf("a pipe gets aligned columns, not tabs:\n%q", piped.Stdout)
	}

	js := h.Run(main, clitest.RunOptions{}, "workloads", "-o", "json")
	if js.Code != 0 || !strings.Contains(js.Stdout, `"kind": "WorkloadList"`) || !strings.Contains(js.Stdout, `"name": "web"`) {
		t.Errorf("-o json prints the list: %s %s", js.Stdout, js.Stderr)
	}
}

func TestListsFollowKubectlsConventions(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	team := h.Namespace // a label value no other test uses
	web := clitest.NewWorkload("web").Build()
	web.Labels = map[string]string{"team": team}
	h.CreateWorkload(web)
	h.CreateWorkload(clitest.NewWorkload("api").Placement("default", 1, "SIN").Build())
	h.WaitRolledOut("web")
	h.WaitRolledOut("api")

	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"-o name prints kind/name":                   {[]string{"workloads", "-o", "name"}, "workload.compute.datumapis.com/api\nworkload.compute.datumapis.com/web\n"},
		"-o jsonpath picks fields":                   {[]string{"workloads", "-o", "jsonpath={.items[*].metadata.name}"}, "api web"},
		"-o go-template ranges over items":           {[]string{"workloads", "-o", "go-template={{range .items}}{{.metadata.name}};{{end}}"}, "api;web;"},
		"-l filters by label":                        {[]string{"workloads", "-l", "team=" + team, "-o", "name"}, "workload.compute.datumapis.com/web\n"},
		"-A with -l finds it from anywhere":          {[]string{"workloads", "-A", "-l", "team=" + team, "--no-headers", "-n", "default"}, h.Namespace + "\tweb\tDFW,LHR\t4/4\t4\tHealthy\tYes\t"},
		"--no-headers leaves the header out":         {[]string{"workloads", "--no-headers"}, "api\tSIN\t1/1\t1\tHealthy\tYes\t"},
		"instances take -l and -o name too":          {[]string{"instances", "-l", "compute.datumapis.com/city-code=LHR", "-o", "name"}, "instance.compute.datumapis.com/web-"},
		"-o wide adds the quota and network columns": {[]string{"instances", "--workload", "web", "-o", "wide"}, "\tPLACEMENT\tQUOTA\tNETWORK-IP\tEXTERNAL-IP\n"},
		"a view takes jsonpath":                      {[]string{"status", "web", "-o", "jsonpath={.name}"}, "web"},
		"instance ages are relative in a pipe":       {[]string{"instances", "--workload", "web", "--no-headers"}, "s\tAvailable\n"},
		"-o custom-columns picks the columns": {[]string{"workloads", "-o", "custom-columns=NAME:.metadata.name,MIN:.spec.placements[0].scaleSettings.minReplicas,TEAM:.metadata.labels.team"},
			"NAME\tMIN\tTEAM\napi\t1\t<none>\nweb\t2\t" + team + "\n"},
		"--sort-by orders by a field, missing last": {[]string{"workloads", "--sort-by", "{.metadata.labels.team}", "-o", "name"},
			"workload.compute.datumapis.com/web\nworkload.compute.datumapis.com/api\n"},
		"--sort-by orders the table too": {[]string{"workloads", "--sort-by", ".metadata.labels.team", "--no-headers"}, "web\tDFW,LHR\t4/4\t4\tHealthy\tYes\t"},
		"instances take custom columns and --sort-by": {[]string{"instances", "--workload", "web", "--no-headers", "--sort-by", ".metadata.labels.compute\\.datumapis\\.com/city-code",
			"-o", "custom-columns=CITY:.metadata.labels.compute\\.datumapis\\.com/city-code,KIND:.kind"}, "DFW\tInstance\nDFW\tInstance\nLHR\tInstance\nLHR\tInstance\n"},
		"instance types take custom columns and --sort-by": {[]string{"instance-types", "--sort-by", ".metadata.name", "-o", "custom-columns=NAME:.metadata.name,KIND:.kind"},
			"datumcloud-d1-standard-2\tInstanceType\n"},
	} {
		t.Run(name, func(t *testing.T) {
			res := h.Run(main, clitest.RunOptions{}, tc.args...)
			if res.Code != cmdutil.ExitOK || !strings.Contains(cells(res.Stdout), tc.want) {
				t.Errorf("%v: exit %d, stdout lacks %q:\n%s%s", tc.args, res.Code, tc.want, res.Stdout, res.Stderr)
			}
			if slices.Contains(tc.args, "--no-headers") && strings.Contains(res.Stdout, "NAME") {
				t.Errorf("--no-headers printed a header:\n%s", res.Stdout)
			}
		})
	}
	// --sort-by orders every item, the first of the table too.
	if res := h.Run(main, clitest.RunOptions{}, "workloads", "--sort-by", ".metadata.labels.team"); !strings.HasPrefix(cells(res.Stdout), "NAME\tCITIES\t") ||
		!strings.HasPrefix(strings.Split(res.Stdout, "\n")[1], "web ") {
		t.Errorf("workloads --sort-by .metadata.labels.team: want web first:\n%s%s", res.Stdout, res.Stderr)
	}
	for _, args := range [][]string{{"status", "web", "-o", "name"}, {"workloads", "-l", "team in (a"}, {"workloads", "-o", "jsonpath={.items["},
		{"workloads", "--sort-by", "{.metadata["}, {"workloads", "-o", "custom-columns=NAME"}, {"status", "web", "-o", "custom-columns=NAME:.name"}} {
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
		"--instance-type offers the catalog":       {[]string{"deploy", "web", "--instance-type", ""}, []string{"datumcloud-d1-standard-2"}},
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
	h := live(t, clilive.Plenty)
	deployed := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW,LHR",
		"--port", "http:8080", "--env", "MODE=prod", "--detach", "-y")
	if deployed.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", deployed.Code, deployed.Stderr)
	}
	h.WaitRolledOut("web")
	got := h.Run(main, clitest.RunOptions{}, "workloads", "web", "-o", "yaml")
	if got.Code != cmdutil.ExitOK || !strings.Contains(got.Stdout, "kind: Workload\n") {
		t.Fatalf("exit %d:\n%s%s", got.Code, got.Stdout, got.Stderr)
	}
	back := h.Run(main, clitest.RunOptions{Stdin: got.Stdout}, "deploy", "-f", "-", "--detach", "-y")
	if back.Code != cmdutil.ExitOK || !strings.Contains(back.Stdout, "web is up to date: nothing to deploy.") {
		t.Errorf("deploy -f of what workloads -o yaml printed should change nothing; exit %d:\n%s%s", back.Code, back.Stdout, back.Stderr)
	}
}
