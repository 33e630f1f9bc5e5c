package install_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// tenantNamespace is where the tenants' namespaced requests go.
const tenantNamespace = "tenant-work"

// sar is one SubjectAccessReview question and its expected answer.
type sar struct {
	verb, resource, subresource string
	clusterScoped               bool
	allowed                     bool
}

func (s sar) String() string {
	r := s.resource
	if s.subresource != "" {
		r += "/" + s.subresource
	}
	return s.verb + " " + r
}

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}
	// computeKinds are compute's kinds in a project plane; instancetypes is
	// cluster-scoped.
	computeKinds = []string{"workloads", "workloaddeployments", "instances", "instancetypes"}
)

// tenantMatrix is what a tenant may do on compute's kinds: read all four;
// with edit, write Workloads only; never write a status subresource, a
// projection (Instance), a WorkloadDeployment (or its scale) or the
// InstanceType catalog.
func tenantMatrix(edit bool) []sar {
	var out []sar
	for _, res := range computeKinds {
		scoped := res == "instancetypes"
		for _, v := range readVerbs {
			out = append(out, sar{v, res, "", scoped, true})
		}
		for _, v := range writeVerbs {
			out = append(out, sar{v, res, "", scoped, edit && res == "workloads"})
		}
		for _, v := range []string{"update", "patch"} {
			out = append(out, sar{v, res, "status", scoped, false})
		}
	}
	out = append(out, sar{"update", "workloaddeployments", "scale", false, false}, sar{"patch", "workloaddeployments", "scale", false, false})
	return out
}

// TestTenantRolesAggregateIntoViewAndEdit binds users to Kubernetes' own
// view and edit ClusterRoles in the project plane — whose clusterrole
// aggregation controller folds compute-viewer and compute-editor into
// them — and checks, with SubjectAccessReviews and with impersonated
// requests, that edit deploys and changes Workloads and reads the rest,
// view only reads, and neither writes a projection or a status.
func TestTenantRolesAggregateIntoViewAndEdit(t *testing.T) {
	installed(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Plane(project).Config())
	if err != nil {
		t.Fatal(err)
	}

	// The aggregation controller copies the tenant roles' rules into view
	// and edit (and admin, through edit's own aggregation label).
	for role, verb := range map[string]string{"view": "list", "edit": "create", "admin": "create"} {
		eventually(t, time.Minute, fmt.Sprintf("the %s ClusterRole aggregates compute's rules (%s workloads)", role, verb), func() error {
			cr, err := cs.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, r := range cr.Rules {
				if slices.Contains(r.APIGroups, "compute.datumapis.com") && slices.Contains(r.Resources, "workloads") && slices.Contains(r.Verbs, verb) {
					return nil
				}
			}
			return fmt.Errorf("no rule %s workloads in %s", verb, role)
		})
	}

	bind := func(user, role string) {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	bind("erin", "edit")
	bind("vic", "view")
	if err := env.Client(project).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": tenantNamespace},
	}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		user string
		edit bool
	}{{"erin", true}, {"vic", false}} {
		t.Run(tc.user, func(t *testing.T) {
			for _, q := range tenantMatrix(tc.edit) {
				ra := &authorizationv1.ResourceAttributes{
					Verb: q.verb, Group: "compute.datumapis.com", Version: "v1alpha", Resource: q.resource, Subresource: q.subresource,
				}
				if !q.clusterScoped {
					ra.Namespace = tenantNamespace
				}
				review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
					Spec: authorizationv1.SubjectAccessReviewSpec{User: tc.user, Groups: []string{"system:authenticated"}, ResourceAttributes: ra},
				}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if review.Status.Allowed != q.allowed {
					t.Errorf("%s (bound to %s): %s is allowed=%v, want %v (%s)", tc.user, map[bool]string{true: "edit", false: "view"}[tc.edit], q, review.Status.Allowed, q.allowed, review.Status.Reason)
				}
			}

			// The same, as requests the user makes (impersonated; writes
			// are server-side dry runs).
			cfg := rest.CopyConfig(env.Plane(project).Config())
			cfg.Impersonate = rest.ImpersonationConfig{UserName: tc.user, Groups: []string{"system:authenticated"}}
			checkAccess(t, tc.user, cfg, []access{
				{"list", workloads, tenantNamespace, allow},
				{"list", instances, tenantNamespace, allow},
				{"list", wds, tenantNamespace, allow},
				{"list", instanceTypes, "", allow},
				{"create", workloads, tenantNamespace, tc.edit},
				{"delete", workloads, tenantNamespace, tc.edit},
				{"create", instances, tenantNamespace, forbid},
				{"delete", instances, tenantNamespace, forbid},
				{"create", wds, tenantNamespace, forbid},
				{"create", instanceTypes, "", forbid},
			})
			dc, err := dynamic.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			probe := &unstructured.Unstructured{}
			probe.SetAPIVersion("compute.datumapis.com/v1alpha")
			probe.SetKind("Workload")
			probe.SetNamespace(tenantNamespace)
			probe.SetName("rbac-probe")
			_, err = dc.Resource(workloads).Namespace(tenantNamespace).UpdateStatus(ctx, probe, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			if !apierrors.IsForbidden(err) {
				t.Errorf("%s writing a Workload's status: want 403 Forbidden, got %v", tc.user, err)
			}
			_, err = dc.Resource(workloads).Namespace(tenantNamespace).Update(ctx, probe, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			switch {
			case tc.edit && apierrors.IsForbidden(err):
				t.Errorf("%s updating a Workload: %v", tc.user, err)
			case !tc.edit && !apierrors.IsForbidden(err):
				t.Errorf("%s updating a Workload: want 403 Forbidden, got %v", tc.user, err)
			}
		})
	}

	// Nobody else: a user with no binding reads nothing of compute.
	cfg := rest.CopyConfig(env.Plane(project).Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "mallory", Groups: []string{"system:authenticated"}}
	checkAccess(t, "an unbound user", cfg, []access{{"list", workloads, tenantNamespace, forbid}, {"list", instanceTypes, "", forbid}})
}
