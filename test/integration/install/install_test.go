package install_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/citycells/compute/internal/webhook"
	"github.com/citycells/compute/test/integration/fixtures"
)

// overlayPlanes say where each overlay goes. The first four are applied for
// real (in this order: the hub and quota-plane overlays create the cells'
// identities); management-plane-hardened, single-cluster and dev go to the
// project plane as a dry run only, since they would replace the
// management-plane installation there.
var overlayPlanes = []overlayPlane{
	{"hub", hub, true},
	{"quota-plane", project, true},
	{"management-plane", project, true},
	{"cell", cell, true},
	{"cell-kubernetes", cell, false},
	{"management-plane-hardened", project, false},
	{"single-cluster", project, false},
	{"dev", project, false},
}

// overlayPlane is where an overlay goes, and whether it is applied for
// real or only as a dry run.
type overlayPlane struct {
	overlay, plane string
	real           bool
}

// externalGroups are served by operators compute's overlays rely on but
// the planes do not run; their objects are reported, not applied.
var externalGroups = map[string]string{
	"cert-manager.io":       "cert-manager (webhook-cert-manager and metrics-certificate components)",
	"monitoring.coreos.com": "prometheus-operator (prometheus component)",
}

const fieldOwner = "compute-install-test"

// apply server-side applies objs to plane: Namespaces first, then CRDs,
// then the rest, as kubectl apply would need them. dryRun adds
// --dry-run=server.
func apply(t *testing.T, plane string, objs []*unstructured.Unstructured, dryRun bool) {
	t.Helper()
	c := env.Client(plane)
	rank := func(u *unstructured.Unstructured) int {
		switch u.GetKind() {
		case "Namespace":
			return 0
		case "CustomResourceDefinition":
			return 1
		default:
			return 2
		}
	}
	sorted := slices.Clone(objs)
	slices.SortStableFunc(sorted, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	for _, u := range sorted {
		group := u.GroupVersionKind().Group
		if owner, ok := externalGroups[group]; ok {
			t.Logf("%s %s/%s: served by %s, which the %s plane does not run; not applied", u.GetKind(), u.GetNamespace(), u.GetName(), owner, plane)
			continue
		}
		opts := []client.ApplyOption{client.FieldOwner(fieldOwner), client.ForceOwnership}
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		if err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u.DeepCopy()), opts...); err != nil {
			t.Errorf("apply %s %s/%s to the %s plane (dry run %v): %v", u.GetKind(), u.GetNamespace(), u.GetName(), plane, dryRun, err)
		}
	}
}

var installOnce sync.Once

// installed applies the real overlays once for every test that needs the
// identities and RBAC they create.
func installed(t *testing.T) {
	t.Helper()
	installOnce.Do(func() {
		for _, o := range overlayPlanes {
			if o.real {
				apply(t, o.plane, render(t, o.overlay), false)
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}
}

// TestEveryOverlayAppliesToItsPlane renders every overlay with the pinned
// kustomize and applies it to the plane it is meant for with
// --dry-run=server; the first four are also applied for real before.
func TestEveryOverlayAppliesToItsPlane(t *testing.T) {
	installed(t)
	for _, o := range overlayPlanes {
		t.Run(o.overlay, func(t *testing.T) {
			objs := render(t, o.overlay)
			if len(objs) == 0 {
				t.Fatalf("config/overlays/%s renders nothing", o.overlay)
			}
			apply(t, o.plane, objs, true)
		})
	}
}

// TestEveryOverlayHasAPlane: every directory of config/overlays is in
// overlayPlanes, so CI dry-runs each against the plane it is meant for.
func TestEveryOverlayHasAPlane(t *testing.T) {
	dirs, err := os.ReadDir(fixtures.RepoDir("config", "overlays"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		if !slices.ContainsFunc(overlayPlanes, func(o overlayPlane) bool { return o.overlay == d.Name() }) {
			t.Errorf("config/overlays/%s is not in overlayPlanes: say which plane it is applied to (and dry-run) there", d.Name())
		}
	}
}

// access is one request an identity makes and whether RBAC must allow it.
type access struct {
	verb      string // list, create, delete, update or update-status
	gvr       schema.GroupVersionResource
	namespace string // empty: cluster-wide
	allowed   bool
}

var (
	workloads     = schema.GroupVersionResource{Group: "compute.datumapis.com", Version: "v1alpha", Resource: "workloads"}
	wds           = schema.GroupVersionResource{Group: "compute.datumapis.com", Version: "v1alpha", Resource: "workloaddeployments"}
	instances     = schema.GroupVersionResource{Group: "compute.datumapis.com", Version: "v1alpha", Resource: "instances"}
	instanceTypes = schema.GroupVersionResource{Group: "compute.datumapis.com", Version: "v1alpha", Resource: "instancetypes"}
	policies      = schema.GroupVersionResource{Group: "policy.karmada.io", Version: "v1alpha1", Resource: "propagationpolicies"}
	namespaces    = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	secrets       = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	claims        = schema.GroupVersionResource{Group: "quota.miloapis.com", Version: "v1alpha1", Resource: "resourceclaims"}
	grants        = schema.GroupVersionResource{Group: "quota.miloapis.com", Version: "v1alpha1", Resource: "resourcegrants"}
	buckets       = schema.GroupVersionResource{Group: "quota.miloapis.com", Version: "v1alpha1", Resource: "allowancebuckets"}
	entitlements  = schema.GroupVersionResource{Group: "services.miloapis.com", Version: "v1alpha1", Resource: "serviceentitlements"}
	kindsOf       = map[string]string{"workloads": "Workload", "workloaddeployments": "WorkloadDeployment", "instances": "Instance", "instancetypes": "InstanceType", "propagationpolicies": "PropagationPolicy", "namespaces": "Namespace", "secrets": "Secret", "resourceclaims": "ResourceClaim", "resourcegrants": "ResourceGrant", "allowancebuckets": "AllowanceBucket", "serviceentitlements": "ServiceEntitlement"}
	allow, forbid = true, false
)

// try makes the request as cfg (writes as server-side dry runs) and
// returns whether RBAC let it through: anything but 401/403 means the
// request passed authorization (a 404 or 422 comes after it).
func try(t *testing.T, cfg *rest.Config, a access) (bool, error) {
	t.Helper()
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ri dynamic.ResourceInterface = dc.Resource(a.gvr)
	if a.namespace != "" {
		ri = dc.Resource(a.gvr).Namespace(a.namespace)
	}
	ctx := context.Background()
	switch a.verb {
	case "list":
		_, err = ri.List(ctx, metav1.ListOptions{Limit: 1})
	case "create":
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(a.gvr.GroupVersion().String())
		u.SetKind(kindsOf[a.gvr.Resource])
		u.SetName("rbac-probe")
		_, err = ri.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	case "delete":
		err = ri.Delete(ctx, "rbac-probe", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	case "update", "update-status":
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(a.gvr.GroupVersion().String())
		u.SetKind(kindsOf[a.gvr.Resource])
		u.SetName("rbac-probe")
		u.SetNamespace(a.namespace)
		u.SetResourceVersion("1")
		if a.verb == "update" {
			_, err = ri.Update(ctx, u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		} else {
			_, err = ri.UpdateStatus(ctx, u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		}
	default:
		t.Fatalf("unknown verb %q", a.verb)
	}
	if (apierrors.IsForbidden(err) && !refusedByAdmission(err)) || apierrors.IsUnauthorized(err) {
		return false, err
	}
	return true, err
}

// refusedByAdmission reports whether a 403 came from an admission policy,
// after authorization let the request through (the probe's name is no
// federation namespace's, say).
func refusedByAdmission(err error) bool {
	return strings.Contains(err.Error(), "ValidatingAdmissionPolicy")
}

// reachedTheResource reports whether err is what a served resource answers
// an authorized probe: an invalid (empty) object on create, a missing
// object on delete, or an admission webhook that is not running.
func reachedTheResource(a access, err error) bool {
	switch a.verb {
	case "create":
		return apierrors.IsInvalid(err) || (apierrors.IsInternalError(err) && strings.Contains(err.Error(), "failed calling webhook")) ||
			(apierrors.IsForbidden(err) && refusedByAdmission(err))
	case "delete", "update", "update-status":
		return apierrors.IsNotFound(err) && strings.Contains(err.Error(), `"rbac-probe" not found`)
	default:
		return false
	}
}

func (a access) String() string {
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	return fmt.Sprintf("%s %s %s", a.verb, a.gvr.Resource, where)
}

func checkAccess(t *testing.T, who string, cfg *rest.Config, want []access) {
	t.Helper()
	for _, a := range want {
		got, err := try(t, cfg, a)
		switch {
		case a.allowed && !got:
			t.Errorf("%s must be allowed to %s, got: %v", who, a, err)
		case !a.allowed && got:
			t.Errorf("%s must be denied %s, but RBAC let it through (%v)", who, a, err)
		case a.allowed && err != nil && !reachedTheResource(a, err):
			// Authorized, but refused for a reason that says the probe
			// did not reach a served resource (a wrong group or version
			// would pass authorization and prove nothing).
			t.Errorf("%s %s: authorized, then %v", who, a, err)
		}
	}
}

// TestEachIdentityHoldsWhatItsRoleNeedsAndNoMore authenticates as every
// identity the overlays create, with TokenRequest tokens, and makes the
// requests its role makes (allowed) and the ones it must never make
// (denied).
func TestEachIdentityHoldsWhatItsRoleNeedsAndNoMore(t *testing.T) {
	installed(t)
	cases := []struct {
		who                  string
		plane, namespace, sa string
		want                 []access
	}{
		{
			who: "the management role in its project plane", plane: project, namespace: "compute-system", sa: "compute-manager",
			want: []access{
				{"list", workloads, "", allow},
				{"update-status", workloads, "default", allow},
				{"update", workloads, "default", forbid}, // a user's spec is the user's
				{"create", wds, "default", allow},
				{"create", instances, "default", allow}, // projections
				{"list", secrets, "compute-system", allow},
				{"list", secrets, "", allow},            // the referenced-data controller watches their metadata
				{"delete", instances, "default", allow}, // projections of gone Instances
				{"create", secrets, "default", forbid},
				{"list", entitlements, "", forbid},
				{"create", claims, "default", forbid},
			},
		},
		{
			who: "the cell role in its cell", plane: cell, namespace: "compute-system", sa: "compute-manager",
			want: []access{
				{"list", wds, "", allow},
				{"list", instances, "", allow},
				{"create", instances, "default", allow},
				{"list", workloads, "", forbid},
				{"list", workloads, "default", forbid},
				{"list", entitlements, "", forbid},
				{"create", wds, "default", forbid},
				{"list", secrets, "", allow}, // the companions' cache watches the labelled ones' metadata
				{"create", secrets, "default", forbid},
			},
		},
		{
			who: "the management role's identity in the hub", plane: hub, namespace: "compute-system", sa: "compute-federation",
			want: []access{
				{"create", wds, "default", allow},
				{"create", policies, "default", allow},
				{"create", namespaces, "", allow},
				{"list", instances, "", allow},
				{"create", instances, "default", forbid},
				{"delete", instances, "default", forbid},
				{"list", workloads, "", forbid},
				// The companions of referenced data: only in the federation
				// namespaces it binds compute-federation-companions in
				// (TestTheManagementRoleHoldsNoKeyToACell).
				{"create", secrets, "default", forbid},
				{"list", secrets, "", forbid},
				{"list", secrets, "karmada-cluster", forbid},
			},
		},
		{
			who: "a cell's identity in the hub", plane: hub, namespace: "compute-cells", sa: "dfw",
			want: []access{
				{"create", instances, "default", allow},
				{"delete", instances, "default", allow},
				{"list", wds, "", allow},
				{"create", wds, "default", forbid},
				{"create", policies, "default", forbid},
				{"create", namespaces, "", forbid},
				{"list", secrets, "", forbid},
			},
		},
		{
			who: "a cell's identity in a quota plane", plane: project, namespace: "compute-cells", sa: "dfw",
			want: []access{
				{"create", claims, "default", allow},
				{"list", claims, "", allow},
				{"delete", claims, "default", allow},
				{"list", grants, "", forbid},
				{"create", buckets, "default", forbid},
				{"list", entitlements, "", forbid},
				{"list", workloads, "", forbid},
				{"list", instances, "", forbid},
				{"list", secrets, "", forbid},
			},
		},
		{
			who: "the quota service in its quota plane", plane: project, namespace: "compute-system", sa: "compute-quota",
			want: []access{
				{"list", claims, "", allow},
				{"list", grants, "", allow},
				{"list", entitlements, "", allow},
				{"create", claims, "default", forbid},
				{"list", workloads, "", forbid},
				{"list", secrets, "", forbid},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.who, func(t *testing.T) {
			checkAccess(t, tc.who+" ("+tc.namespace+"/"+tc.sa+")", serviceAccountConfig(t, tc.plane, tc.namespace, tc.sa), tc.want)
		})
	}
}

// TestIdentitiesDoNotCrossPlanes: a plane's ServiceAccount token means
// nothing to another plane, so the management role — which holds
// credentials for project planes and the hub only — cannot create Instances
// in a cell, and a cell cannot act in another cell.
func TestIdentitiesDoNotCrossPlanes(t *testing.T) {
	installed(t)
	mgmt := serviceAccountConfig(t, project, "compute-system", "compute-manager")
	fed := serviceAccountConfig(t, hub, "compute-system", "compute-federation")
	for who, cfg := range map[string]*rest.Config{"the management role's project identity": mgmt, "its hub identity": fed} {
		cfg = rest.CopyConfig(cfg)
		cfg.Host = env.Plane(cell).URL()
		a := access{"create", instances, "default", forbid}
		if got, err := try(t, cfg, a); got {
			t.Errorf("%s can %s in a cell (%v)", who, a, err)
		} else if !apierrors.IsUnauthorized(err) {
			t.Errorf("%s in a cell: want 401 Unauthorized (unknown token), got %v", who, err)
		}
	}
}

// TestProjectUsersCannotWriteHubObjects: a project's user, even with full
// rights in the project plane, holds nothing in the hub: the hub's
// WorkloadDeployments, PropagationPolicies and Instances are compute's.
func TestProjectUsersCannotWriteHubObjects(t *testing.T) {
	installed(t)
	ctx := context.Background()
	admin := env.Client(project)
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": "alice-admin", "namespace": "default"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}},
	}}
	if err := admin.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	inProject, err := env.Plane(project).ClientConfig("alice", "project-users")
	if err != nil {
		t.Fatal(err)
	}
	// Alice can work in her project...
	checkAccess(t, "alice in her project plane", inProject, []access{{"create", workloads, "default", allow}})
	// ...and the same certificate, presented to the hub, gets nowhere.
	inHub, err := env.Plane(hub).ClientConfig("alice", "project-users")
	if err != nil {
		t.Fatal(err)
	}
	checkAccess(t, "alice in the hub", inHub, []access{
		{"create", wds, "default", forbid},
		{"create", instances, "default", forbid},
		{"create", policies, "default", forbid},
		{"list", wds, "", forbid},
	})
}

// TestTheProjectionGuardSkipsOnlyTheManager: every overlay that registers
// the projection guard leaves out the requests of the ServiceAccount its
// manager Deployment runs as, and no one else's (the condition the API
// server evaluates; TestEveryOverlayAppliesToItsPlane proves it compiles).
func TestTheProjectionGuardSkipsOnlyTheManager(t *testing.T) {
	guarded := 0
	for _, o := range overlayPlanes {
		objs := render(t, o.overlay)
		var manager string
		var conditions []any
		for _, obj := range objs {
			switch obj.GetKind() {
			case "Deployment":
				sa, _, _ := unstructured.NestedString(obj.Object, "spec", "template", "spec", "serviceAccountName")
				manager = "system:serviceaccount:" + obj.GetNamespace() + ":" + sa
			case "ValidatingWebhookConfiguration":
				hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
				for _, h := range hooks {
					if h := h.(map[string]any); h["name"] == webhook.ProjectionGuardName {
						conditions, _, _ = unstructured.NestedSlice(h, "matchConditions")
						if conditions == nil {
							t.Errorf("%s: the projection guard reviews the manager's own writes (no matchConditions)", o.overlay)
						}
					}
				}
			}
		}
		if conditions == nil {
			continue
		}
		guarded++
		want := webhook.SkipUsersCondition([]string{manager})
		got := conditions[0].(map[string]any)
		if len(conditions) != 1 || got["name"] != want.Name || got["expression"] != want.Expression {
			t.Errorf("%s: the projection guard's matchConditions are %v, want only %q", o.overlay, conditions, want.Expression)
		}
	}
	if guarded < 3 {
		t.Errorf("only %d overlays register the projection guard with its condition; management-plane, single-cluster and dev do", guarded)
	}
}
