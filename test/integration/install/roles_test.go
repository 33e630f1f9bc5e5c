package install_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/manager"
	"github.com/citycells/compute/internal/manager/management"
	"github.com/citycells/compute/internal/names"
)

// forbiddenLog collects every log line of the managers that reports an
// RBAC denial.
type forbiddenLog struct {
	mu    sync.Mutex
	lines []string
}

func (f *forbiddenLog) add(prefix, args string) {
	if os.Getenv("INSTALL_LOG") != "" {
		println(prefix, args)
	}
	if strings.Contains(args, "forbidden") || strings.Contains(args, "Forbidden") {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.lines = append(f.lines, prefix+" "+args)
	}
}

func (f *forbiddenLog) get() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lines...)
}

// writeKubeconfig writes cfg (a bearer-token identity) as a kubeconfig file
// and returns its path, as a mounted kubeconfig Secret would hold it.
func writeKubeconfig(t *testing.T, name string, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	p := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTheRolesRunUnderTheirOverlayIdentities runs compute-manager's own
// wiring (manager.Run, what the binary runs) for the management role and
// for a cell role with the simulated provider, each authenticated with
// TokenRequest tokens of the ServiceAccounts the overlays create and
// limited by the overlays' RBAC, and drives a WorkloadDeployment through
// every hop: federated into the hub, copied into the cell (Karmada's part,
// done here by the admin), Instances created and made available in the
// cell, written back to the hub and projected into the project; the cell
// renews its heartbeat Lease in the hub. Any denial (RBAC or the cell
// isolation policy) in the managers' logs fails the test.
func TestTheRolesRunUnderTheirOverlayIdentities(t *testing.T) {
	installed(t)
	g := gomega.NewWithT(t)
	// The dev overlay's simulated-provider binding, for the cell role's
	// simulated runtime.
	var sim []*unstructured.Unstructured
	for _, u := range render(t, "dev") {
		if strings.Contains(u.GetName(), "simulated-provider") {
			sim = append(sim, u)
		}
	}
	if len(sim) != 2 {
		t.Fatalf("the dev overlay renders %d simulated-provider RBAC objects, want a ClusterRole and its binding", len(sim))
	}
	apply(t, cell, sim, false)
	// The management-plane overlay registered its admission webhooks in the
	// project plane; the management role below runs with --disable-webhooks
	// (no serving certificate here; the webhooks have their own tests), so
	// their registrations go, or every projection would fail on them.
	for _, u := range render(t, "management-plane") {
		if strings.HasSuffix(u.GetKind(), "WebhookConfiguration") {
			if err := env.Client(project).Delete(context.Background(), u); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
	}

	forbidden := &forbiddenLog{}
	ctrl.SetLogger(funcr.New(forbidden.add, funcr.Options{}))

	mgmt := manager.NewOptions()
	mgmt.EnableManagement = true
	mgmt.Kubeconfig = writeKubeconfig(t, "project-management", serviceAccountConfig(t, project, "compute-system", "compute-manager"))
	mgmt.FederationKubeconfig = writeKubeconfig(t, "hub-federation", serviceAccountConfig(t, hub, "compute-system", "compute-federation"))
	mgmt.Management.Webhook.Disabled = true
	mgmt.MetricsAddr, mgmt.ProbeAddr = "0", "0"

	cellOpts := manager.NewOptions()
	cellOpts.EnableCell, cellOpts.RuntimeProvider = true, manager.RuntimeProviderSimulated
	cellOpts.SimulatedProviderDelay = 100 * time.Millisecond
	cellOpts.Kubeconfig = writeKubeconfig(t, "cell", serviceAccountConfig(t, cell, "compute-system", "compute-manager"))
	cellOpts.FederationKubeconfig = writeKubeconfig(t, "hub-cell", serviceAccountConfig(t, hub, "compute-cells", "dfw"))
	// The cell named dfw, as docs/install.md names it (its ServiceAccount
	// too): it renews its heartbeat Lease dfw in the hub, which the hub's
	// isolation policy lets it write, as it lets it write DFW's Instances.
	cellOpts.Quota.CellName = "dfw"
	cellOpts.MetricsAddr, cellOpts.ProbeAddr = "0", "0"

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for name, o := range map[string]*manager.Options{"management": mgmt, "cell": cellOpts} {
		if err := o.Validate(); err != nil {
			t.Fatalf("%s options: %v", name, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := manager.Run(ctx, o); err != nil {
				t.Errorf("the %s role stopped: %v", name, err)
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	t.Cleanup(func() {
		if lines := forbidden.get(); len(lines) > 0 {
			t.Errorf("the roles hit %d RBAC denials; first:\n%s", len(lines), strings.Join(lines[:min(5, len(lines))], "\n"))
		}
	})

	scheme := management.NewScheme()
	admin := func(plane string) client.Client {
		c, err := client.New(env.Plane(plane).Config(), client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	projectC, hubC, cellC := admin(project), admin(hub), admin(cell)

	t.Log("the cell renews its heartbeat Lease in the hub under its own name")
	g.Eventually(func() error {
		return hubC.Get(ctx, client.ObjectKey{Namespace: "compute-system", Name: "dfw"}, &coordinationv1.Lease{})
	}, time.Minute, 200*time.Millisecond).Should(gomega.Succeed())

	t.Log("a WorkloadDeployment in a project namespace is federated into the hub by the management role's hub identity")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "install-"}}
	g.Expect(projectC.Create(ctx, ns)).To(gomega.Succeed())
	hubNS := names.FederationNamespace(ns.UID)
	wd := makeWD(ns.Name, "web-dfw", "DFW", 2)
	g.Expect(projectC.Create(ctx, wd)).To(gomega.Succeed())
	hubWD := &computev1alpha.WorkloadDeployment{}
	g.Eventually(func() error {
		return hubC.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: wd.Name}, hubWD)
	}, time.Minute, 200*time.Millisecond).Should(gomega.Succeed())

	t.Log("Karmada's part, by the admin: the hub namespace and WorkloadDeployment copied into the cell")
	hubNSObj := &corev1.Namespace{}
	g.Expect(hubC.Get(ctx, client.ObjectKey{Name: hubNS}, hubNSObj)).To(gomega.Succeed())
	g.Expect(cellC.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hubNS, Labels: hubNSObj.Labels}})).To(gomega.Succeed())
	cellWD := &computev1alpha.WorkloadDeployment{ObjectMeta: metav1.ObjectMeta{
		Namespace: hubNS, Name: hubWD.Name, Labels: hubWD.Labels, Annotations: hubWD.Annotations,
	}, Spec: hubWD.Spec}
	g.Expect(cellC.Create(ctx, cellWD)).To(gomega.Succeed())

	t.Log("the cell role creates the Instances and the simulated provider makes them available, under the cell's identity")
	g.Eventually(func(g gomega.Gomega) {
		var list computev1alpha.InstanceList
		g.Expect(cellC.List(ctx, &list, client.InNamespace(hubNS))).To(gomega.Succeed())
		g.Expect(list.Items).To(gomega.HaveLen(2))
		for _, inst := range list.Items {
			g.Expect(meta.IsStatusConditionTrue(inst.Status.Conditions, computev1alpha.ConditionReady)).To(gomega.BeTrue(), "Instance %s ready", inst.Name)
		}
	}, 2*time.Minute, 200*time.Millisecond).Should(gomega.Succeed())

	t.Log("the cell writes them back to the hub with its hub identity, and the management role projects them into the project")
	g.Eventually(func(g gomega.Gomega) {
		var list computev1alpha.InstanceList
		g.Expect(hubC.List(ctx, &list, client.InNamespace(hubNS))).To(gomega.Succeed())
		g.Expect(list.Items).To(gomega.HaveLen(2))
	}, time.Minute, 200*time.Millisecond).Should(gomega.Succeed())
	g.Eventually(func(g gomega.Gomega) {
		var list computev1alpha.InstanceList
		g.Expect(projectC.List(ctx, &list, client.InNamespace(ns.Name))).To(gomega.Succeed())
		g.Expect(list.Items).To(gomega.HaveLen(2))
		for _, inst := range list.Items {
			g.Expect(meta.IsStatusConditionTrue(inst.Status.Conditions, computev1alpha.ConditionReady)).To(gomega.BeTrue(), "projection %s ready", inst.Name)
		}
	}, time.Minute, 200*time.Millisecond).Should(gomega.Succeed())
}

// makeWD returns a project WorkloadDeployment of city with min replicas, as
// the Workload controller writes it.
func makeWD(namespace, name, city string, minReplicas int32) *computev1alpha.WorkloadDeployment {
	return &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
			computev1alpha.WorkloadNameLabel:     "web",
			computev1alpha.CityCodeLabel:         city,
			computev1alpha.CityCodeTopologyLabel: city,
		}},
		Spec: computev1alpha.WorkloadDeploymentSpec{
			WorkloadRef:   computev1alpha.WorkloadReference{Name: "web", UID: "workload-uid"},
			PlacementName: "edge",
			CityCode:      city,
			Template: computev1alpha.InstanceTemplateSpec{Spec: computev1alpha.InstanceSpec{
				Runtime: computev1alpha.InstanceRuntimeSpec{
					Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
					Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
						Name: "app", Image: "ghcr.io/citycells/hello:1.0",
					}}},
				},
			}},
			ScaleSettings: computev1alpha.HorizontalScaleSettings{
				MinReplicas:              minReplicas,
				InstanceManagementPolicy: computev1alpha.OrderedReadyInstanceManagementPolicy,
			},
		},
	}
}
