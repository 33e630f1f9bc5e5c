//go:build linux

package platform

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestCellManagersGetTheQuotaFlagsWhenTheBinaryHasThem(t *testing.T) {
	ports := managerPorts{metrics: 7001, probe: 7002}
	cell := managerRole{name: "compute-manager-cell-dfw", plane: "cell-dfw", kubeconfig: "/s/cell-dfw.kubeconfig", cell: true, quotaKubeconfig: "/s/quota.kubeconfig"}
	help := "--enable-cell-controllers --kubeconfig --quota-kubeconfig string --cell-name string"

	tests := map[string]struct {
		role  managerRole
		help  string
		want  []string
		avoid []string
	}{
		"a cell gets the quota kubeconfig and its plane as its name": {
			role: cell, help: help,
			want: []string{"--quota-kubeconfig=/s/quota.kubeconfig", "--cell-name=cell-dfw"},
		},
		"a cell runs without quota when the quota service does not run, and still names itself for its heartbeat": {
			role: func() managerRole { r := cell; r.quotaKubeconfig = ""; return r }(), help: help,
			want:  []string{"--cell-name=cell-dfw"},
			avoid: []string{"--quota-kubeconfig=/s/quota.kubeconfig"},
		},
		"a binary without --cell-name gets neither flag (it could not run with just one)": {
			role: cell, help: "--enable-cell-controllers --kubeconfig --quota-kubeconfig string",
			avoid: []string{"--quota-kubeconfig=/s/quota.kubeconfig"},
		},
		"the management role gets no quota flags": {
			role: managerRole{name: "compute-manager-project-default", kubeconfig: "/s/p.kubeconfig", quotaKubeconfig: "/s/quota.kubeconfig"},
			help: help + " --enable-management-controllers", avoid: []string{"--quota-kubeconfig=/s/quota.kubeconfig"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			args, ok := managerArgs(tc.role, parseManagerFlags(tc.help), "/s/hub.kubeconfig", ports)
			if !ok {
				t.Fatal("the role does not run")
			}
			for _, w := range tc.want {
				if !slices.Contains(args, w) {
					t.Errorf("%s is not passed: %v", w, args)
				}
			}
			for _, a := range tc.avoid {
				if slices.Contains(args, a) {
					t.Errorf("%s is passed: %v", a, args)
				}
			}
		})
	}
}

func TestQuotaArgs(t *testing.T) {
	ports := managerPorts{metrics: 7001, probe: 7002}
	got := quotaArgs("default", "/s/project-default.kubeconfig", QuotaGrant{}, ports, false)
	want := []string{
		"--activate-entitlements=true", "--grant-namespace=default", "--health-probe-bind-address=127.0.0.1:7002", "--kubeconfig=/s/project-default.kubeconfig",
		"--leader-elect=false", "--metrics-bind-address=127.0.0.1:7001", "--project=default",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("compute-quota args (-want +got):\n%s", diff)
	}
	got = quotaArgs("default", "/s/project-default.kubeconfig", QuotaGrant{Instances: 3, VCPU: "6", Memory: "12Gi"}, ports, false)
	for _, w := range []string{"--default-instances=3", "--default-vcpus=6", "--default-memory=12Gi"} {
		if !slices.Contains(got, w) {
			t.Errorf("%s is not passed: %v", w, got)
		}
	}
}

func TestAQuotaGrantIsValidated(t *testing.T) {
	for name, tc := range map[string]struct {
		grant QuotaGrant
		ok    bool
	}{
		"the defaults":           {QuotaGrant{}, true},
		"amounts":                {QuotaGrant{Instances: 3, VCPU: "500m", Memory: "1Gi"}, true},
		"negative instances":     {QuotaGrant{Instances: -1}, false},
		"vCPU that is no amount": {QuotaGrant{VCPU: "lots"}, false},
		"negative memory":        {QuotaGrant{Memory: "-1Gi"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			if err := tc.grant.validate(); (err == nil) != tc.ok {
				t.Errorf("validate() = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestTheBuildMakesComputeQuotaNextToComputeManager(t *testing.T) {
	repo := t.TempDir()
	bin := filepath.Join("/s", "bin", managerBinaryName)
	if diff := cmp.Diff([]string{"build", "-o", "/s/bin/", "./cmd/compute-manager"}, buildArgs(repo, bin)); diff != "" {
		t.Errorf("without cmd/compute-quota (-want +got):\n%s", diff)
	}
	if err := os.MkdirAll(filepath.Join(repo, "cmd", quotaBinaryName), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "cmd", quotaBinaryName, "main.go"), []byte("package main\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"build", "-o", "/s/bin/", "./cmd/compute-manager", "./cmd/compute-quota"}, buildArgs(repo, bin)); diff != "" {
		t.Errorf("with cmd/compute-quota (-want +got):\n%s", diff)
	}

	dir := t.TempDir()
	if got, why := quotaBinary(filepath.Join(dir, managerBinaryName)); got != "" || why == "" {
		t.Errorf("a missing compute-quota is found: %q (%q)", got, why)
	}
	if err := os.WriteFile(filepath.Join(dir, quotaBinaryName), nil, 0o700); err != nil {
		t.Fatal(err)
	}
	if got, _ := quotaBinary(filepath.Join(dir, managerBinaryName)); got != filepath.Join(dir, quotaBinaryName) {
		t.Errorf("compute-quota next to compute-manager is not found: %q", got)
	}
}

func TestTheQuotaKubeconfigHasAContextPerProject(t *testing.T) {
	plane := func(name, server string) []byte {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t-" + name}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "u"}
		cfg.CurrentContext = name
		data, err := clientcmd.Write(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	out := clientcmdapi.NewConfig()
	for _, p := range []struct{ project, server string }{{"default", "https://127.0.0.1:1001"}, {"team-a", "https://127.0.0.1:1002"}} {
		if err := addQuotaContext(out, p.project, ProjectPlane(p.project), plane(ProjectPlane(p.project), p.server)); err != nil {
			t.Fatal(err)
		}
	}
	if out.CurrentContext != "" {
		t.Errorf("the quota kubeconfig has current context %q: unknown projects would reach a plane", out.CurrentContext)
	}
	for project, server := range map[string]string{"default": "https://127.0.0.1:1001", "team-a": "https://127.0.0.1:1002"} {
		cfg, err := clientcmd.NewNonInteractiveClientConfig(*out, project, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
		if err != nil {
			t.Fatalf("context %s: %v", project, err)
		}
		if cfg.Host != server || cfg.BearerToken != "t-"+ProjectPlane(project) {
			t.Errorf("context %s reaches %s as %q", project, cfg.Host, cfg.BearerToken)
		}
	}
	if err := addQuotaContext(out, "x", "project-x", []byte("apiVersion: v1\nkind: Config\n")); err == nil {
		t.Error("a kubeconfig without a current context is accepted")
	}
}

func TestQuotaConditionSaysWhetherComputeQuotaRuns(t *testing.T) {
	tests := map[string]struct {
		state State
		want  string
	}{
		"running": {
			state: State{Components: []ComponentRecord{{Name: "compute-manager-cell-dfw"}, {Name: componentQuotaPrefix + "project-default"}}},
			want:  "quota on (compute-quota)",
		},
		"skipped, with the reason": {
			state: State{Skipped: []SkippedRecord{{Name: componentQuotaPrefix + "*", Reason: "compute-quota is not next to /x/compute-manager"}}},
			want:  "quota off (compute-quota-* not started: compute-quota is not next to /x/compute-manager)",
		},
		"absent": {want: "quota off (compute-quota not started)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.state.QuotaCondition(); got != tc.want {
				t.Errorf("QuotaCondition() = %q, want %q", got, tc.want)
			}
		})
	}
}
