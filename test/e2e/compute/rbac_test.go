//go:build e2e

package compute

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/nsgrant"
	"github.com/citycells/compute/internal/local/platform"
)

// The resources the identities are probed on.
var (
	gvrWorkloads    = schema.GroupVersionResource{Group: "compute.datumapis.com", Version: "v1alpha", Resource: "workloads"}
	gvrWDs          = schema.GroupVersionResource{Group: "compute.datumapis.com", Version: "v1alpha", Resource: "workloaddeployments"}
	gvrInstances    = schema.GroupVersionResource{Group: "compute.datumapis.com", Version: "v1alpha", Resource: "instances"}
	gvrPolicies     = schema.GroupVersionResource{Group: "policy.karmada.io", Version: "v1alpha1", Resource: "propagationpolicies"}
	gvrSecrets      = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gvrClaims       = schema.GroupVersionResource{Group: "quota.miloapis.com", Version: "v1alpha1", Resource: "resourceclaims"}
	gvrGrants       = schema.GroupVersionResource{Group: "quota.miloapis.com", Version: "v1alpha1", Resource: "resourcegrants"}
	gvrBuckets      = schema.GroupVersionResource{Group: "quota.miloapis.com", Version: "v1alpha1", Resource: "allowancebuckets"}
	gvrEntitlements = schema.GroupVersionResource{Group: "services.miloapis.com", Version: "v1alpha1", Resource: "serviceentitlements"}
	kindOf          = map[string]string{
		"workloads": "Workload", "workloaddeployments": "WorkloadDeployment", "instances": "Instance",
		"propagationpolicies": "PropagationPolicy", "secrets": "Secret", "resourceclaims": "ResourceClaim",
		"resourcegrants": "ResourceGrant", "allowancebuckets": "AllowanceBucket", "serviceentitlements": "ServiceEntitlement",
	}
)

// probe is one request an identity makes, and whether RBAC must let it
// through.
type probe struct {
	verb      string // list or create (a server-side dry run)
	gvr       schema.GroupVersionResource
	namespace string // empty: cluster-wide
	allowed   bool
}

func (p probe) String() string {
	where := "cluster-wide"
	if p.namespace != "" {
		where = "in " + p.namespace
	}
	return p.verb + " " + p.gvr.Resource + " " + where
}

// do makes the request as cfg; writes are server-side dry runs.
func (p probe) do(ctx context.Context, cfg *rest.Config) error {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = dc.Resource(p.gvr)
	if p.namespace != "" {
		ri = dc.Resource(p.gvr).Namespace(p.namespace)
	}
	switch p.verb {
	case "list":
		_, err = ri.List(ctx, metav1.ListOptions{Limit: 1})
	case "create":
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(p.gvr.GroupVersion().String())
		u.SetKind(kindOf[p.gvr.Resource])
		u.SetName("rbac-probe")
		_, err = ri.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	default:
		return fmt.Errorf("unknown verb %q", p.verb)
	}
	return err
}

// expectAccess makes every probe as who and checks RBAC's answer: a
// denied probe must get 403 Forbidden; an allowed one must pass
// authorization (a create then fails validation or admission: the probe
// object is empty, and it is a dry run anyway).
func expectAccess(t *testing.T, who string, cfg *rest.Config, probes ...probe) {
	t.Helper()
	for _, p := range probes {
		err := p.do(t.Context(), cfg)
		switch {
		case apierrors.IsUnauthorized(err):
			t.Errorf("%s: %s: the credentials were refused (401), so this proves nothing: %v", who, p, err)
		case p.allowed && apierrors.IsForbidden(err):
			t.Errorf("%s must be allowed to %s: %v", who, p, err)
		case p.allowed && p.verb == "list" && err != nil:
			t.Errorf("%s: %s: %v", who, p, err)
		case !p.allowed && !apierrors.IsForbidden(err):
			t.Errorf("%s must be forbidden to %s, got %v", who, p, err)
		}
	}
}

// component returns the record of a running component.
func component(t *testing.T, name string) platform.ComponentRecord {
	t.Helper()
	for _, c := range local.State().Components {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("the platform runs no %s", name)
	return platform.ComponentRecord{}
}

// kubeconfigOf returns the client configuration a running component was
// started with through --<flag> (a kubeconfig path), in context kubeContext
// (empty: the current one): exactly the identity the process runs as.
func kubeconfigOf(t *testing.T, name, flag, kubeContext string) *rest.Config {
	t.Helper()
	c := component(t, name)
	path := ""
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--"+flag+"="); ok {
			path = v
		}
	}
	if path == "" {
		t.Fatalf("%s runs without --%s: %v", name, flag, c.Args)
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path},
		&clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		t.Fatalf("the --%s of %s: %v", flag, name, err)
	}
	if cfg.BearerToken == "" || cfg.CertData != nil || cfg.CertFile != "" {
		t.Fatalf("the --%s of %s is not a ServiceAccount token kubeconfig", flag, name)
	}
	return cfg
}

// projectionWriter is a client of the project plane as the management
// role's identity: the one the admission webhook lets write projections.
func projectionWriter(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(kubeconfigOf(t, "compute-manager-"+projectPlane, "kubeconfig", ""), client.Options{Scheme: scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	projectPlane = platform.ProjectPlane(platform.DefaultProject)
	cellDFW      = platform.CellPlane("DFW")
)

// TestEveryComputeProcessRunsAsItsOverlayServiceAccount: every
// compute-manager and compute-quota kubeconfig authenticates as the
// ServiceAccount its overlay creates, and no process holds an admin
// kubeconfig.
func TestEveryComputeProcessRunsAsItsOverlayServiceAccount(t *testing.T) {
	type use struct{ component, flag, context, user string }
	uses := []use{
		{"compute-manager-" + projectPlane, "kubeconfig", "", "system:serviceaccount:compute-system:compute-manager"},
		{"compute-manager-" + projectPlane, "federation-kubeconfig", "", "system:serviceaccount:compute-system:compute-federation"},
		{"compute-quota-" + projectPlane, "kubeconfig", "", "system:serviceaccount:compute-system:compute-quota"},
	}
	for _, city := range cities {
		plane := platform.CellPlane(city)
		uses = append(uses,
			use{"compute-manager-" + plane, "kubeconfig", "", "system:serviceaccount:compute-system:compute-manager"},
			use{"compute-manager-" + plane, "federation-kubeconfig", "", "system:serviceaccount:compute-cells:" + plane},
			use{"compute-manager-" + plane, "quota-kubeconfig", platform.DefaultProject, "system:serviceaccount:compute-cells:" + plane},
		)
	}
	for _, u := range uses {
		cfg := kubeconfigOf(t, u.component, u.flag, u.context)
		c, err := client.New(cfg, client.Options{Scheme: scheme()})
		if err != nil {
			t.Fatal(err)
		}
		review := &authenticationv1.SelfSubjectReview{}
		if err := c.Create(t.Context(), review); err != nil {
			t.Errorf("%s --%s: SelfSubjectReview: %v", u.component, u.flag, err)
			continue
		}
		if got := review.Status.UserInfo.Username; got != u.user {
			t.Errorf("%s --%s authenticates as %q, want %q", u.component, u.flag, got, u.user)
		}
	}
}

// TestACellIdentityCannotReadWorkloads: a cell's compute-manager reads
// WorkloadDeployments in its cell, and the companions of referenced data
// there (metadata of the labelled Secrets), but no Workload or
// ServiceEntitlement, and it writes no Secret; in the hub it writes
// Instances back but cannot create WorkloadDeployments or
// PropagationPolicies, nor read Workloads or Secrets (Karmada brings its
// city's companions to its cell).
func TestACellIdentityCannotReadWorkloads(t *testing.T) {
	name := "compute-manager-" + cellDFW
	expectAccess(t, "the DFW cell's identity in its cell", kubeconfigOf(t, name, "kubeconfig", ""),
		probe{"list", gvrWDs, "", true},
		probe{"list", gvrInstances, "", true},
		probe{"list", gvrWorkloads, "", false},
		probe{"list", gvrWorkloads, "default", false},
		probe{"list", gvrSecrets, "", true},
		probe{"create", gvrSecrets, "default", false},
		probe{"create", gvrWDs, "default", false},
	)
	expectAccess(t, "the DFW cell's identity in the hub", kubeconfigOf(t, name, "federation-kubeconfig", ""),
		probe{"list", gvrWDs, "", true},
		probe{"create", gvrInstances, "default", true},
		probe{"list", gvrWorkloads, "", false},
		probe{"create", gvrWDs, "default", false},
		probe{"create", gvrPolicies, "default", false},
		probe{"list", gvrSecrets, "", false},
	)
}

// TestACellWritesOnlyItsOwnCityInTheHub: the hub's cell isolation policy,
// installed from the hub overlay, refuses the DFW cell's hub identity an
// Instance of LHR and LHR's heartbeat Lease, saying what the cell may
// write, and admits an Instance of DFW (server-side dry runs).
func TestACellWritesOnlyItsOwnCityInTheHub(t *testing.T) {
	ctx := t.Context()
	dfw, err := client.New(kubeconfigOf(t, "compute-manager-"+cellDFW, "federation-kubeconfig", ""), client.Options{Scheme: scheme()})
	if err != nil {
		t.Fatal(err)
	}
	instance := func(city string) *computev1alpha.Instance {
		return &computev1alpha.Instance{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "isolation-probe-" + strings.ToLower(city),
				Labels: map[string]string{computev1alpha.CityCodeLabel: city}},
			Spec: computev1alpha.InstanceSpec{Runtime: computev1alpha.InstanceRuntimeSpec{
				Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
				Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
					Name: "app", Image: "ghcr.io/citycells/hello:1.0",
				}}},
			}},
		}
	}
	says := "cell " + cellDFW + " may write only the Instances of city DFW"
	refused := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), says) {
			t.Errorf("the DFW cell's hub identity %s: want 403 saying %q, got %v", what, says, err)
		}
	}
	if err := dfw.Create(ctx, instance("DFW"), client.DryRunAll); err != nil {
		t.Errorf("the DFW cell's hub identity creating a DFW Instance: %v", err)
	}
	refused("creating an LHR Instance", dfw.Create(ctx, instance("LHR"), client.DryRunAll))
	lease := &coordinationv1.Lease{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: "compute-system", Name: platform.CellPlane("LHR")}, lease); err != nil {
		t.Fatalf("LHR's heartbeat Lease: %v", err)
	}
	refused("renewing LHR's heartbeat Lease", dfw.Update(ctx, lease, client.DryRunAll))
}

// TestACellCannotForgeAnInstanceOfAnotherCitysDeployment (#38, hole 3):
// with a Workload running in DFW and LHR, the DFW cell's own hub identity
// writes back, labelled DFW as the city policy makes it, an Instance
// naming LHR's WorkloadDeployment: the hub's policy
// compute-cell-instance-owners refuses it, from the city the management
// role recorded; so is one of DFW's deployment under the name LHR's next
// Instance will need (a squat); one naming DFW's deployment under its own
// name is admitted (dry runs).
func TestACellCannotForgeAnInstanceOfAnotherCitysDeployment(t *testing.T) {
	ctx := t.Context()
	g := NewWithT(t)
	dfw, err := client.New(kubeconfigOf(t, "compute-manager-"+cellDFW, "federation-kubeconfig", ""), client.Options{Scheme: scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "forgery").withPlacement("edge", 1, "DFW", "LHR").w
	g.Expect(project.Create(ctx, w)).To(Succeed())
	expectAvailable(t, w, counts{deployments: 2, replicas: 2, ready: 2, desired: 2, updated: 2})
	owner := map[string]string{}
	for _, wd := range deploymentsOf(g, w) {
		owner[wd.Spec.CityCode] = wd.Name
	}
	var written computev1alpha.InstanceList
	g.Expect(hub.List(ctx, &written, client.InNamespace(ns.hub),
		client.MatchingLabels{computev1alpha.WorkloadDeploymentNameLabel: owner["DFW"]})).To(Succeed())
	g.Expect(written.Items).NotTo(BeEmpty(), "DFW's Instance in the hub")
	claiming := func(deployment string) *computev1alpha.Instance {
		inst := &computev1alpha.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: ns.hub, Name: deployment + "-forged",
			Labels: maps.Clone(written.Items[0].Labels)}, Spec: written.Items[0].Spec}
		inst.Labels[computev1alpha.WorkloadDeploymentNameLabel] = deployment
		return inst
	}
	err = dfw.Create(ctx, claiming(owner["LHR"]), client.DryRunAll)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "belongs to WorkloadDeployment "+owner["LHR"]+" of city LHR") {
		t.Errorf("the DFW cell forging an Instance of LHR's deployment: want 403 naming it, got %v", err)
	}
	// A squat: an Instance of its own deployment under the name LHR's
	// write-back will give its second Instance.
	squat := claiming(owner["DFW"])
	squat.Name = owner["LHR"] + "-1"
	err = dfw.Create(ctx, squat, client.DryRunAll)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "is named after WorkloadDeployment "+owner["LHR"]+" of city LHR") {
		t.Errorf("the DFW cell squatting the name %s: want 403 naming LHR's deployment, got %v", squat.Name, err)
	}
	if err := dfw.Create(ctx, claiming(owner["DFW"]), client.DryRunAll); err != nil {
		t.Errorf("the DFW cell writing back an Instance of its own deployment: %v", err)
	}
}

// TestAManagementIdentityCannotCreateInstancesInACell: the management
// role's credentials mean nothing to a cell (401: it holds no identity
// there), and its hub identity reads the Instances cells write back but
// cannot create or delete one; it holds no Secret of the hub outside the
// federation namespaces where it binds the companions role (Karmada's
// credentials of the cells are hub Secrets): the referenced-data tests are
// its legitimate path there.
func TestAManagementIdentityCannotCreateInstancesInACell(t *testing.T) {
	name := "compute-manager-" + projectPlane
	cellURL := local.Config(cellDFW).Host
	for _, flag := range []string{"kubeconfig", "federation-kubeconfig"} {
		cfg := rest.CopyConfig(kubeconfigOf(t, name, flag, ""))
		cfg.Host = cellURL
		cfg.CAData = local.Config(cellDFW).CAData
		err := probe{"create", gvrInstances, "default", false}.do(t.Context(), cfg)
		if !apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err) {
			t.Errorf("the management role's --%s creating an Instance in the DFW cell: want 401 or 403, got %v", flag, err)
		}
	}
	expectAccess(t, "the management role's identity in the hub", kubeconfigOf(t, name, "federation-kubeconfig", ""),
		probe{"list", gvrInstances, "", true},
		probe{"create", gvrWDs, "default", true},
		probe{"create", gvrInstances, "default", false},
		probe{"list", gvrWorkloads, "", false},
		probe{"create", gvrSecrets, "default", false},
		probe{"list", gvrSecrets, "", false},
		probe{"list", gvrSecrets, "karmada-cluster", false},
	)
	expectAccess(t, "the management role's identity in its project", kubeconfigOf(t, name, "kubeconfig", ""),
		probe{"list", gvrWorkloads, "", true},
		probe{"list", gvrClaims, "", false},
		probe{"list", gvrEntitlements, "", false},
	)
}

// TestTheQuotaIdentitiesHoldOnlyResourceClaims: a cell's identity in the
// quota plane manages ResourceClaims and nothing else; compute-quota's own
// identity reads quota objects but no compute object or Secret.
func TestTheQuotaIdentitiesHoldOnlyResourceClaims(t *testing.T) {
	expectAccess(t, "the DFW cell's identity in the quota plane", kubeconfigOf(t, "compute-manager-"+cellDFW, "quota-kubeconfig", platform.DefaultProject),
		probe{"list", gvrClaims, "", true},
		probe{"create", gvrClaims, "default", true},
		probe{"list", gvrGrants, "", false},
		probe{"create", gvrGrants, "default", false},
		probe{"list", gvrBuckets, "", false},
		probe{"list", gvrEntitlements, "", false},
		probe{"list", gvrWorkloads, "", false},
		probe{"list", gvrInstances, "", false},
		probe{"list", gvrSecrets, "", false},
	)
	expectAccess(t, "compute-quota's identity", kubeconfigOf(t, "compute-quota-"+projectPlane, "kubeconfig", ""),
		probe{"list", gvrClaims, "", true},
		probe{"list", gvrGrants, "", true},
		probe{"create", gvrClaims, "default", false},
		probe{"list", gvrWorkloads, "", false},
		probe{"list", gvrInstances, "", false},
		probe{"list", gvrSecrets, "", false},
	)
}

// TestAProjectUserCannotWriteProjectionsOrHubObjects: a tenant with every
// right on compute's kinds in its namespace (and the ordinary edit role)
// deploys a Workload, but cannot create, change or delete the projected
// Instances compute writes there — the admission webhook refuses, naming
// the Workload to change instead — and holds nothing in the hub.
func TestAProjectUserCannotWriteProjectionsOrHubObjects(t *testing.T) {
	ctx := t.Context()
	g := NewWithT(t)
	ns := newProjectNamespace(t)
	const user = "tenant-alice"
	tenantRole := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "compute-tenant", Namespace: ns.name},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{computev1alpha.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"*"},
		}},
	}
	g.Expect(project.Create(ctx, tenantRole)).To(Succeed())
	for _, ref := range []rbacv1.RoleRef{
		{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		{APIGroup: rbacv1.GroupName, Kind: "Role", Name: tenantRole.Name},
	} {
		g.Expect(project.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + strings.ToLower(ref.Kind), Namespace: ns.name},
			RoleRef:    ref,
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		})).To(Succeed())
	}
	inProject, err := local.Environment().Plane(projectPlane).ClientConfig(user, "tenants")
	g.Expect(err).NotTo(HaveOccurred())
	tenant, err := client.New(inProject, client.Options{Scheme: scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	t.Log("the tenant deploys a Workload in its namespace, and compute projects its Instance there")
	w := makeWorkload(ns.name, "web").withPlacement("edge", 1, "DFW").w
	g.Expect(tenant.Create(ctx, w)).To(Succeed())
	expectAvailable(t, w, counts{deployments: 1, replicas: 1, ready: 1, desired: 1, updated: 1})
	var projections computev1alpha.InstanceList
	g.Eventually(func(g Gomega) {
		g.Expect(tenant.List(ctx, &projections, client.InNamespace(ns.name))).To(Succeed())
		g.Expect(projections.Items).To(HaveLen(1))
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	projection := projections.Items[0]
	g.Expect(projection.Labels).To(HaveKey(computev1alpha.ProjectionLabel))

	readOnly := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "read-only projection") {
			t.Errorf("the tenant %s: want the webhook's denial of a read-only projection, got %v", what, err)
		}
	}
	t.Log("the tenant cannot change, relabel, delete or forge a projection")
	changed := projection.DeepCopy()
	changed.Annotations = map[string]string{"tenant": "was-here"}
	readOnly("annotating a projection", tenant.Update(ctx, changed))
	unlabelled := projection.DeepCopy()
	delete(unlabelled.Labels, computev1alpha.ProjectionLabel)
	readOnly("removing a projection's label", tenant.Update(ctx, unlabelled))
	readOnly("changing a projection's status", tenant.Status().Update(ctx, projection.DeepCopy()))
	readOnly("deleting a projection", tenant.Delete(ctx, projection.DeepCopy()))
	forged := &computev1alpha.Instance{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns.name, Name: "forged", Labels: map[string]string{computev1alpha.ProjectionLabel: "true"},
	}, Spec: projection.Spec}
	readOnly("creating an Instance labelled as a projection", tenant.Create(ctx, forged))

	t.Log("the same user presented to the hub holds nothing there")
	inHub, err := local.Environment().Plane(platform.HubPlane).ClientConfig(user, "tenants")
	g.Expect(err).NotTo(HaveOccurred())
	expectAccess(t, "the tenant in the hub", inHub,
		probe{"list", gvrWDs, "", false},
		probe{"list", gvrWDs, ns.hub, false},
		probe{"create", gvrWDs, ns.hub, false},
		probe{"create", gvrInstances, ns.hub, false},
		probe{"create", gvrPolicies, ns.hub, false},
	)
}

// denialPattern finds an apiserver's RBAC denial in a log line (JSON logs
// escape the quotes): user, verb, resource, group and namespace.
var denialPattern = regexp.MustCompile(`User \\?"([^"\\]+)\\?" cannot (\S+) resource \\?"([^"\\]+)\\?" in API group \\?"([^"\\]*)\\?"(?: in the namespace \\?"([^"\\]+)\\?")?`)

// isolationRefusal is how an apiserver's refusal by one of the cell
// isolation policies (config/rbac/cell-isolation) begins.
const isolationRefusal = "ValidatingAdmissionPolicy 'compute-cell"

// noRBACDenials fails the run when a compute-manager or compute-quota
// logged an RBAC denial that RBAC still makes: the overlays' RBAC is not
// enough for something the platform did. A denial RBAC now allows (a
// SubjectAccessReview in the plane that refused it) was an apiserver
// restarted by a fault test answering before its authorizer had read the
// roles; those are counted, not failed. A refusal by a cell isolation
// policy always fails the run: a cell wrote outside its own objects.
func noRBACDenials(p *platform.Platform) error {
	var real, isolated []string
	transient := 0
	for _, c := range p.State().Components {
		if !strings.HasPrefix(c.Name, "compute-manager-") && !strings.HasPrefix(c.Name, "compute-quota-") {
			continue
		}
		f, err := os.Open(c.Log)
		if err != nil {
			return fmt.Errorf("cannot read the log of %s: %w", c.Name, err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, isolationRefusal) {
				isolated = append(isolated, c.Name+": "+line)
				continue
			}
			if !strings.Contains(line, "is forbidden: User") {
				continue
			}
			m := denialPattern.FindStringSubmatch(line)
			if m == nil {
				real = append(real, c.Name+" (unparsed): "+line)
				continue
			}
			allowed, err := allowedNow(p, c, m[1], m[2], m[3], m[4], m[5])
			if err != nil {
				_ = f.Close()
				return err
			}
			if allowed {
				transient++
			} else {
				real = append(real, fmt.Sprintf("%s: %s cannot %s %s (group %q, namespace %q)", c.Name, m[1], m[2], m[3], m[4], m[5]))
			}
		}
		_ = f.Close()
	}
	if transient > 0 {
		fmt.Fprintf(os.Stderr, "%d RBAC denials in compute's logs are allowed now (an apiserver answering right after a fault restarted it)\n", transient)
	}
	if len(isolated) > 0 {
		return errors.New("the cell isolation policies refused compute's components " + fmt.Sprint(len(isolated)) +
			" times; first:\n" + strings.Join(isolated[:min(5, len(isolated))], "\n"))
	}
	if len(real) > 0 {
		return errors.New("the overlays' RBAC refused compute's components " + fmt.Sprint(len(real)) +
			" times; first:\n" + strings.Join(real[:min(5, len(real))], "\n"))
	}
	return nil
}

// allowedNow asks the plane that refused a component's request whether
// RBAC allows it now: the component's own plane for its plane identity,
// the hub for the federation identities, the project planes for the cells'
// quota identity.
func allowedNow(p *platform.Platform, c platform.ComponentRecord, user, verb, resource, group, namespace string) (bool, error) {
	planes := []string{c.Plane}
	if strings.HasPrefix(user, "system:serviceaccount:compute-cells:") || user == "system:serviceaccount:compute-system:compute-federation" {
		planes = []string{platform.HubPlane}
		if group == "quota.miloapis.com" {
			planes = nil
			for _, pl := range p.State().Planes {
				if pl.Role == platform.RoleProject {
					planes = append(planes, pl.Name)
				}
			}
		}
	}
	parts := strings.Split(user, ":")
	groups := []string{"system:authenticated"}
	if len(parts) == 4 {
		groups = append(groups, "system:serviceaccounts", "system:serviceaccounts:"+parts[2])
	}
	res, sub, _ := strings.Cut(resource, "/")
	names := []string{""}
	if verb == "list" || verb == "watch" {
		names = append(names, namedWatches[res]...)
	}
	for _, plane := range planes {
		allowed, err := allowedIn(p, plane, authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: group, Resource: res, Subresource: sub, Namespace: namespace,
		}}, names)
		if err != nil || !allowed {
			return false, err
		}
	}
	return len(planes) > 0, nil
}

// namedWatches are the objects compute's components list and watch by name
// (a metadata.name field selector, which the apiserver authorizes as a
// request for that name): a denial of such a watch names no object, so
// allowedNow asks about each.
var namedWatches = map[string][]string{"rolebindings": {nsgrant.DebugRelay, nsgrant.Companions}}

// allowedIn asks one plane whether RBAC allows the request, unnamed or for
// any of names.
func allowedIn(p *platform.Platform, plane string, spec authorizationv1.SubjectAccessReviewSpec, names []string) (bool, error) {
	cs, err := kubernetes.NewForConfig(p.Config(plane))
	if err != nil {
		return false, err
	}
	for _, name := range names {
		spec.ResourceAttributes.Name = name
		review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(),
			&authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("SubjectAccessReview in %s: %w", plane, err)
		}
		if review.Status.Allowed {
			return true, nil
		}
	}
	return false, nil
}
