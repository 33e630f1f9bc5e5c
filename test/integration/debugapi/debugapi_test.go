package debugapi

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// seed creates a namespace with a federated WorkloadDeployment and its
// projected Instance in DFW, and returns the namespace.
func seed(t *testing.T, name string) string {
	t.Helper()
	g := gomega.NewWithT(t)
	ctx := t.Context()
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(gomega.Succeed())
	wd := &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "web-dfw",
			Annotations: map[string]string{computev1alpha.FederationNamespaceAnnotation: "ns-" + name}},
		Spec: computev1alpha.WorkloadDeploymentSpec{
			WorkloadRef: computev1alpha.WorkloadReference{Name: "web", UID: "workload-uid"}, PlacementName: "edge", CityCode: "DFW",
			Template: computev1alpha.InstanceTemplateSpec{Spec: computev1alpha.InstanceSpec{Runtime: runtimeSpec()}},
			ScaleSettings: computev1alpha.HorizontalScaleSettings{
				MinReplicas: 1, InstanceManagementPolicy: computev1alpha.OrderedReadyInstanceManagementPolicy,
			},
		},
	}
	g.Expect(admin.Create(ctx, wd)).To(gomega.Succeed())
	inst := &computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "web-dfw-0", Labels: map[string]string{
			computev1alpha.WorkloadNameLabel: "web", computev1alpha.WorkloadDeploymentNameLabel: wd.Name,
			computev1alpha.CityCodeLabel: "DFW", computev1alpha.ProjectionLabel: "true",
		}},
		Spec: computev1alpha.InstanceSpec{Runtime: runtimeSpec(), Controller: &computev1alpha.InstanceController{TemplateHash: "h1"}},
	}
	g.Expect(admin.Create(ctx, inst)).To(gomega.Succeed())
	return name
}

func runtimeSpec() computev1alpha.InstanceRuntimeSpec {
	return computev1alpha.InstanceRuntimeSpec{
		Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
		Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
			Name: "app", Image: "ghcr.io/citycells/hello:1.0",
		}}},
	}
}

// tenant binds user to clusterRole in namespace and returns the user's
// client of the project plane (a certificate of the plane's CA).
func tenant(t *testing.T, user, namespace, clusterRole string) kubernetes.Interface {
	t.Helper()
	g := gomega.NewWithT(t)
	g.Expect(admin.Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})).To(gomega.Succeed())
	cfg, err := env.Plane(plane).ClientConfig(user, "tenants")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return cs
}

// debugRequest is a request of the debug API as the user.
func debugRequest(cs kubernetes.Interface, verb, namespace, sub string) *rest.Request {
	return cs.CoreV1().RESTClient().Verb(verb).
		AbsPath("/apis/debug.compute.datumapis.com/v1alpha/namespaces", namespace, "instances", "web-dfw-0", sub)
}

// TestTheTenantsRolesDecide: through the project plane's aggregator, a
// viewer reads an Instance's log (relayed to its city's cluster proxy in
// its federation namespace) and is refused exec; an editor passes the
// exec authorization; a tenant of another namespace is refused both; an
// anonymous request straight at the debug API is refused.
func TestTheTenantsRolesDecide(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := t.Context()
	ns := seed(t, "team")
	seed(t, "elsewhere")
	viewer := tenant(t, "viewer-vera", ns, "view")
	editor := tenant(t, "editor-ed", ns, "edit")
	stranger := tenant(t, "stranger-sam", "elsewhere", "edit")

	var body []byte
	g.Eventually(func() error {
		// The aggregation controller folds compute-viewer into view.
		var err error
		body, err = debugRequest(viewer, "GET", ns, "log").Param("tailLines", "2").Do(ctx).Raw()
		return err
	}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(gomega.Succeed())
	g.Expect(string(body)).To(gomega.ContainSubstring("GET /?id=2"))
	g.Expect(hubCalls.list()).To(gomega.ContainElement(
		"/apis/cluster.karmada.io/v1alpha1/clusters/cell-dfw/proxy/api/v1/namespaces/ns-team/pods/web-dfw-0/log"))

	refused := func(who string, err error, want string) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want Forbidden with %q, got %v", who, want, err)
		}
	}
	err := debugRequest(viewer, "POST", ns, "exec").Param("command", "true").Param("stdout", "true").Do(ctx).Error()
	refused("the viewer's exec", err, `User "viewer-vera" cannot create resource "instances/exec" in API group "debug.compute.datumapis.com" in the namespace "team"`)
	err = debugRequest(stranger, "GET", ns, "log").Do(ctx).Error()
	refused("the stranger's log", err, `cannot get resource "instances/log"`)
	err = debugRequest(stranger, "POST", ns, "exec").Param("command", "true").Do(ctx).Error()
	refused("the stranger's exec", err, `cannot create resource "instances/exec"`)

	// The editor passes authorization: the request reaches the relay,
	// which wants an upgrade the stand-in hub does not give.
	err = debugRequest(editor, "POST", ns, "exec").Param("command", "true").Param("stdout", "true").Do(ctx).Error()
	if apierrors.IsForbidden(err) {
		t.Errorf("the editor's exec was refused: %v", err)
	}
	g.Expect(hubCalls.list()).To(gomega.ContainElement(
		"/apis/cluster.karmada.io/v1alpha1/clusters/cell-dfw/proxy/api/v1/namespaces/ns-team/pods/web-dfw-0/exec"))

	// The stranger reads its own namespace's log.
	g.Expect(debugRequest(stranger, "GET", "elsewhere", "log").Do(ctx).Error()).To(gomega.Succeed())
}

// TestOnlyTheAggregatorIsBelieved: a client that reaches the debug API's
// port and claims a user in the X-Remote-User header, without the
// aggregator's front-proxy certificate, is refused.
func TestOnlyTheAggregatorIsBelieved(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cfg := rest.CopyConfig(env.Config(plane))
	// The admin's own client certificate is of the plane's CA, not the
	// front-proxy CA.
	cfg.Host = "https://127.0.0.1:" + strconv.Itoa(debugPort)
	cfg.ServerName = "compute-debug.compute-system.svc"
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	err = cs.CoreV1().RESTClient().Get().
		AbsPath("/apis/debug.compute.datumapis.com/v1alpha/namespaces/team/instances/web-dfw-0/log").
		SetHeader("X-Remote-User", "system:admin").SetHeader("X-Remote-Group", "system:masters").Do(ctx).Error()
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("a request that did not come through the aggregator: want Unauthorized, got %v", err)
	}
}
