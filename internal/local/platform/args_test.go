//go:build linux

package platform

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var testPorts = newKarmadaPorts([]int{1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008})

func TestKarmadaArgsOverrideEveryDefaultPort(t *testing.T) {
	for name, args := range map[string][]string{
		"webhook":            webhookArgs("/s/hub.kubeconfig", "/s/karmada/webhook", testPorts),
		"controller-manager": controllerManagerArgs("/s/hub.kubeconfig", testPorts),
		"scheduler":          schedulerArgs("/s/hub.kubeconfig", testPorts),
	} {
		t.Run(name, func(t *testing.T) {
			joined := strings.Join(args, " ")
			for _, flag := range []string{"--metrics-bind-address=127.0.0.1:", "--health-probe-bind-address=127.0.0.1:", "--kubeconfig=/s/hub.kubeconfig"} {
				if !strings.Contains(joined, flag) {
					t.Errorf("%s lacks %s: %s", name, flag, joined)
				}
			}
			if strings.Contains(joined, ":8080") || strings.Contains(joined, "0.0.0.0") {
				t.Errorf("%s binds a default or public address: %s", name, joined)
			}
		})
	}
}

func TestControllerManagerArgs(t *testing.T) {
	args := controllerManagerArgs("/s/hub.kubeconfig", testPorts)
	for _, want := range []string{
		"--leader-elect=false",
		"--cluster-failure-threshold=3s",
		"--cluster-success-threshold=1s",
		"--cluster-status-update-frequency=1s",
		"--cluster-monitor-period=1s",
		"--health-probe-bind-address=127.0.0.1:1005",
		"--metrics-bind-address=127.0.0.1:1006",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("missing %s in %v", want, args)
		}
	}
	if !slices.Contains(schedulerArgs("/k", testPorts), "--leader-elect=false") {
		t.Error("the scheduler elects a leader")
	}
}

func TestControllerManagerRunsOnlyWhatComputeNeeds(t *testing.T) {
	args := controllerManagerArgs("/s/hub.kubeconfig", testPorts)
	flag := func(name string) string {
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				return v
			}
		}
		t.Fatalf("no --%s in %v", name, args)
		return ""
	}
	controllers := strings.Split(flag("controllers"), ",")
	if controllers[0] != "*" {
		t.Errorf("--controllers must start from Karmada's defaults (*): %v", controllers)
	}
	// What compute relies on: propagation, status collection, the
	// federation namespaces in the cells and cluster health.
	for _, needed := range []string{"cluster", "clusterStatus", "binding", "bindingStatus", "execution", "workStatus", "namespace", "gracefulEviction", "applicationFailover"} {
		if slices.Contains(controllers, "-"+needed) {
			t.Errorf("--controllers disables %s, which compute needs", needed)
		}
	}
	for _, unused := range []string{"serviceExport", "endpointSlice", "federatedHorizontalPodAutoscaler", "federatedResourceQuotaSync", "unifiedAuth"} {
		if !slices.Contains(controllers, "-"+unused) {
			t.Errorf("--controllers keeps %s: %v", unused, controllers)
		}
	}
	if got := flag("enable-cluster-resource-modeling"); got != "false" {
		t.Errorf("--enable-cluster-resource-modeling=%s, want false", got)
	}
	// The detector skips the hub kinds compute never propagates, and
	// only those: WorkloadDeployments must stay propagated.
	if got := flag("skipped-propagating-apis"); got != "compute.datumapis.com/v1alpha/Instance,Workload" {
		t.Errorf("--skipped-propagating-apis=%s", got)
	}
	// compute's own hub namespaces stay in the hub; the federation
	// namespaces (ns-<uid>) must still reach the cells.
	skipped := strings.Split(flag("skipped-propagating-namespaces"), ",")
	for _, ns := range []string{"kube-system", "compute-system", "compute-cells"} {
		if !slices.ContainsFunc(skipped, func(re string) bool { return regexp.MustCompile("^(" + re + ")$").MatchString(ns) }) {
			t.Errorf("--skipped-propagating-namespaces=%v lets Karmada copy %s into the cells", skipped, ns)
		}
	}
	for _, re := range skipped {
		if regexp.MustCompile("^(" + re + ")$").MatchString("ns-11e68f8d-5505-4b1a-893b-c032100149fb") {
			t.Errorf("--skipped-propagating-namespaces entry %q skips the federation namespaces", re)
		}
	}
}

func TestAggregatedAPIServerArgs(t *testing.T) {
	got := aggregatedAPIServerArgs("/s/hub.kubeconfig", "http://127.0.0.1:2379", "/c.crt", "/c.key", 1001)
	want := []string{
		"--authentication-kubeconfig=/s/hub.kubeconfig",
		"--authorization-kubeconfig=/s/hub.kubeconfig",
		"--bind-address=127.0.0.1",
		"--enable-priority-and-fairness=false",
		"--etcd-prefix=/karmada-aggregated-apiserver",
		"--etcd-servers=http://127.0.0.1:2379",
		"--kubeconfig=/s/hub.kubeconfig",
		"--profiling=false",
		"--secure-port=1001",
		"--tls-cert-file=/c.crt",
		"--tls-private-key-file=/c.key",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}

func TestWebhookObjectsPointAtTheLocalWebhook(t *testing.T) {
	objs, err := webhookObjects(webhookConfiguration, "https://127.0.0.1:1002", "Q0E=")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("want the mutating and the validating configuration, got %d objects", len(objs))
	}
	count := 0
	for _, o := range objs {
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			url, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "url")
			ca, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "caBundle")
			if !strings.HasPrefix(url, "https://127.0.0.1:1002/") || ca != "Q0E=" {
				t.Errorf("webhook %v points at %s with caBundle %q", h.(map[string]any)["name"], url, ca)
			}
			count++
		}
	}
	if count < 10 {
		t.Errorf("only %d webhooks rendered", count)
	}
}

func TestManagerArgs(t *testing.T) {
	help := `Usage of compute-manager:
      --enable-cell-controllers      Run the cell role.
      --enable-management-controllers Run the management role.
      --enable-simulated-provider    Run the simulated provider.
      --health-probe-bind-address string
      --kubeconfig string
      --leader-elect
      --metrics-bind-address string
      --single-project-cluster-name string
      --webhook-cert-dir string
      --webhook-host string
      --webhook-port int`
	flags := parseManagerFlags(help)
	ports := managerPorts{metrics: 7001, probe: 7002}

	cell, ok := managerArgs(managerRole{name: "compute-manager-cell-dfw", kubeconfig: "/s/cell-dfw.kubeconfig", cell: true}, flags, "/s/hub.kubeconfig", ports)
	wantCell := []string{
		"--enable-cell-controllers=true", "--enable-simulated-provider=true", "--health-probe-bind-address=127.0.0.1:7002",
		"--kubeconfig=/s/cell-dfw.kubeconfig", "--leader-elect=false", "--metrics-bind-address=127.0.0.1:7001",
	}
	if diff := cmp.Diff(wantCell, cell); !ok || diff != "" {
		t.Errorf("cell args (ok %v) (-want +got):\n%s", ok, diff)
	}

	mgmt, ok := managerArgs(managerRole{
		name: "compute-manager-project-default", kubeconfig: "/s/p.kubeconfig", project: "default",
		webhookCertDir: "/s/certs", webhookPort: 7003,
	}, flags, "/s/hub.kubeconfig", ports)
	wantMgmt := []string{
		"--enable-management-controllers=true", "--health-probe-bind-address=127.0.0.1:7002", "--kubeconfig=/s/p.kubeconfig",
		"--leader-elect=false", "--metrics-bind-address=127.0.0.1:7001", "--single-project-cluster-name=default",
		"--webhook-cert-dir=/s/certs", "--webhook-host=127.0.0.1", "--webhook-port=7003",
	}
	if diff := cmp.Diff(wantMgmt, mgmt); !ok || diff != "" {
		t.Errorf("management args (ok %v) (-want +got):\n%s", ok, diff)
	}

	withFederation := parseManagerFlags(help + "\n      --federation-kubeconfig string")
	mgmt, _ = managerArgs(managerRole{kubeconfig: "/s/p.kubeconfig"}, withFederation, "/s/hub.kubeconfig", ports)
	if !slices.Contains(mgmt, "--federation-kubeconfig=/s/hub.kubeconfig") {
		t.Errorf("the federation kubeconfig is not passed: %v", mgmt)
	}

	withCity := parseManagerFlags(help + "\n      --cell-city-code string")
	cell, _ = managerArgs(managerRole{kubeconfig: "/s/cell-dfw.kubeconfig", cell: true, cityCode: "DFW"}, withCity, "/s/hub.kubeconfig", ports)
	if !slices.Contains(cell, "--cell-city-code=DFW") {
		t.Errorf("the cell's city code is not passed: %v", cell)
	}

	if _, ok := managerArgs(managerRole{cell: true}, parseManagerFlags("--kubeconfig string"), "/h", ports); ok {
		t.Error("a binary without the cell role runs it")
	}
}

func TestStopTierStopsClientsBeforeServers(t *testing.T) {
	order := []string{"compute-manager-cell-dfw", "karmada-controller-manager", "karmada-webhook", "kube-controller-manager-hub", "kube-apiserver-hub", "etcd"}
	for i := 1; i < len(order); i++ {
		before, after := stopTier(ComponentRecord{Name: order[i-1]}), stopTier(ComponentRecord{Name: order[i]})
		if before < after {
			t.Errorf("%s (tier %d) would stop after %s (tier %d)", order[i-1], before, order[i], after)
		}
	}
}

func TestPointsInto(t *testing.T) {
	for arg, want := range map[string]bool{
		"--data-dir=/s/etcd":            true,
		"--kubeconfig=/s":               true,
		"/s/bin/compute-manager":        true,
		"--kubeconfig=/s2/x.kubeconfig": false,
		"--secure-port=6443":            false,
	} {
		if got := pointsInto(arg, "/s"); got != want {
			t.Errorf("pointsInto(%q) = %v", arg, got)
		}
	}
}

func TestOwnedAndRSS(t *testing.T) {
	self := os.Getpid()
	argv0 := os.Args[0]
	if !owned(ComponentRecord{PID: self, Binary: argv0}) {
		t.Error("the test process does not own itself")
	}
	if owned(ComponentRecord{PID: self, Binary: "/usr/bin/something-else"}) {
		t.Error("a pid running another binary is claimed")
	}
	if owned(ComponentRecord{PID: 0, Binary: argv0}) {
		t.Error("pid 0 is claimed")
	}
	rss, err := RSSBytes(self)
	if err != nil || rss <= 0 {
		t.Errorf("RSS of the test process: %d, %v", rss, err)
	}
}

func TestProgressPrefixesEveryLine(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, time.Now())
	p.linef("one")
	if _, err := p.Write([]byte("planes: two\nthree\n")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines, got %q", buf.String())
	}
	for i, want := range []string{"one", "two", "three"} {
		if !strings.HasPrefix(lines[i], "[") || !strings.HasSuffix(lines[i], "s] "+want) {
			t.Errorf("line %d = %q", i, lines[i])
		}
	}
}
