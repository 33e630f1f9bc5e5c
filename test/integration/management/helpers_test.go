package management

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Eventually bounds. Generous: they bound failure, not speed.
const (
	timeout  = 60 * time.Second
	interval = 100 * time.Millisecond
)

// namespaceSeq makes test namespaces unique.
var namespaceSeq atomic.Int64

// newNamespace creates a namespace for one test in plane.
func newNamespace(t *testing.T, plane string) string {
	t.Helper()
	name := fmt.Sprintf("t%d-%s", namespaceSeq.Add(1), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := clients[plane].Create(context.Background(), ns); err != nil {
		t.Fatalf("failed to create namespace %s in %s: %v", name, plane, err)
	}
	return name
}

// bindCity makes city usable in namespace ns of plane: a Location serving
// it (Ready as given) and a LocationBinding. It returns the Location name.
func bindCity(t *testing.T, plane, ns, city string, ready bool) string {
	t.Helper()
	loc := ensureLocation(t, plane, city, ready)
	createBinding(t, plane, ns, loc)
	return loc
}

// ensureLocation creates or updates the Location of city in plane
// (<city>-1) with the given readiness and returns its name.
func ensureLocation(t *testing.T, plane, city string, ready bool) string {
	t.Helper()
	return ensureNamedLocation(t, plane, strings.ToLower(city)+"-1", map[string]string{networkingv1alpha.CityCodeTopologyKey: city}, ready)
}

// ensureNamedLocation creates (or finds) Location name with topology in
// plane, sets its readiness and returns its name.
func ensureNamedLocation(t *testing.T, plane, name string, topology map[string]string, ready bool) string {
	t.Helper()
	ctx := context.Background()
	c := clients[plane]
	loc := &networkingv1alpha.Location{}
	err := c.Get(ctx, types.NamespacedName{Namespace: locationNamespace, Name: name}, loc)
	if apierrors.IsNotFound(err) {
		loc = &networkingv1alpha.Location{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: locationNamespace},
			Spec: networkingv1alpha.LocationSpec{
				LocationClassName: networkingv1alpha.LocationClassDatumManaged,
				Topology:          topology,
			},
		}
		err = c.Create(ctx, loc)
	}
	if err != nil {
		t.Fatalf("failed to create Location %s: %v", name, err)
	}
	setLocationReady(t, plane, name, ready)
	return name
}

// setLocationReady sets a Location's Ready condition, as its operator would.
func setLocationReady(t *testing.T, plane, name string, ready bool) {
	t.Helper()
	ctx := context.Background()
	c := clients[plane]
	loc := &networkingv1alpha.Location{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: locationNamespace, Name: name}, loc); err != nil {
		t.Fatalf("failed to get Location %s: %v", name, err)
	}
	cond := metav1.Condition{Type: networkingv1alpha.LocationConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", Message: "serving"}
	if !ready {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Maintenance", "the cell is drained for maintenance"
	}
	meta.SetStatusCondition(&loc.Status.Conditions, cond)
	if err := c.Status().Update(ctx, loc); err != nil {
		t.Fatalf("failed to set Location %s ready=%v: %v", name, ready, err)
	}
}

// createBinding binds a Location to a namespace.
func createBinding(t *testing.T, plane, ns, location string) {
	t.Helper()
	b := &networkingv1alpha.LocationBinding{
		ObjectMeta: metav1.ObjectMeta{Name: location, Namespace: ns},
		Spec: networkingv1alpha.LocationBindingSpec{
			LocationRef: networkingv1alpha.LocationReference{Namespace: locationNamespace, Name: location},
		},
	}
	if err := clients[plane].Create(context.Background(), b); err != nil {
		t.Fatalf("failed to bind %s to %s: %v", location, ns, err)
	}
}

// unbind deletes the binding of a Location to a namespace.
func unbind(t *testing.T, plane, ns, location string) {
	t.Helper()
	b := &networkingv1alpha.LocationBinding{ObjectMeta: metav1.ObjectMeta{Name: location, Namespace: ns}}
	if err := clients[plane].Delete(context.Background(), b); err != nil {
		t.Fatalf("failed to unbind %s from %s: %v", location, ns, err)
	}
}

// workloadBuilder builds Workloads: makeWorkload is a valid sandbox
// Workload without placements.
type workloadBuilder struct{ computev1alpha.Workload }

func makeWorkload(name, ns string) *workloadBuilder {
	w := &workloadBuilder{}
	w.Name, w.Namespace = name, ns
	w.Spec.Template.Spec.Runtime.Resources.InstanceType = "datumcloud/d1-standard-2"
	w.Spec.Template.Spec.Runtime.Sandbox = &computev1alpha.SandboxRuntime{
		Containers: []computev1alpha.SandboxContainer{{
			Name: "app", Image: "ghcr.io/example/app:1.0",
			Ports: []computev1alpha.NamedPort{{Name: "http", Port: 8080}},
		}},
	}
	return w
}

func (w *workloadBuilder) withPlacement(name string, min int32, cities ...string) *workloadBuilder {
	w.Spec.Placements = append(w.Spec.Placements, computev1alpha.WorkloadPlacement{
		Name: name, CityCodes: cities, ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: min},
	})
	return w
}

func (w *workloadBuilder) withHistoryLimit(n int32) *workloadBuilder {
	w.Spec.RevisionHistoryLimit = ptr.To(n)
	return w
}

func (w *workloadBuilder) with(f func(*computev1alpha.Workload)) *workloadBuilder {
	f(&w.Workload)
	return w
}

func (w *workloadBuilder) build() *computev1alpha.Workload { return w.DeepCopy() }

// create creates w in plane and returns it as stored.
func create(t *testing.T, plane string, w *computev1alpha.Workload) *computev1alpha.Workload {
	t.Helper()
	if err := clients[plane].Create(context.Background(), w); err != nil {
		t.Fatalf("failed to create Workload %s in %s: %v", w.Name, plane, err)
	}
	return w
}

// update changes a Workload with f, retrying on conflicts.
func update(t *testing.T, plane string, w *computev1alpha.Workload, f func(*computev1alpha.Workload)) {
	t.Helper()
	g := gomega.NewWithT(t)
	g.Eventually(func() error {
		cur := &computev1alpha.Workload{}
		if err := clients[plane].Get(context.Background(), client.ObjectKeyFromObject(w), cur); err != nil {
			return err
		}
		f(cur)
		return clients[plane].Update(context.Background(), cur)
	}, timeout, interval).Should(gomega.Succeed())
}

// tryUpdate changes a Workload with f, retrying only on conflicts, and
// returns the final error.
func tryUpdate(plane string, w *computev1alpha.Workload, f func(*computev1alpha.Workload)) error {
	for {
		cur := &computev1alpha.Workload{}
		if err := clients[plane].Get(context.Background(), client.ObjectKeyFromObject(w), cur); err != nil {
			return err
		}
		f(cur)
		if err := clients[plane].Update(context.Background(), cur); !apierrors.IsConflict(err) {
			return err
		}
	}
}

// getWorkload reads a Workload.
func getWorkload(g gomega.Gomega, plane string, w *computev1alpha.Workload) *computev1alpha.Workload {
	cur := &computev1alpha.Workload{}
	g.Expect(clients[plane].Get(context.Background(), client.ObjectKeyFromObject(w), cur)).To(gomega.Succeed())
	return cur
}

// deploymentsOf returns the WorkloadDeployments labelled with w's UID, by
// city code ("placement/CITY" when the Workload has several placements).
func deploymentsOf(g gomega.Gomega, plane string, w *computev1alpha.Workload) map[string]computev1alpha.WorkloadDeployment {
	var list computev1alpha.WorkloadDeploymentList
	g.Expect(clients[plane].List(context.Background(), &list, client.InNamespace(w.Namespace),
		client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(w.UID)})).To(gomega.Succeed())
	out := map[string]computev1alpha.WorkloadDeployment{}
	for _, wd := range list.Items {
		key := wd.Spec.CityCode
		if len(w.Spec.Placements) > 1 {
			key = wd.Spec.PlacementName + "/" + key
		}
		out[key] = wd
	}
	return out
}

// cityKeys returns the keys of a deployment map.
func cityKeys(m map[string]computev1alpha.WorkloadDeployment) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// cityStatus returns the status a Workload reports for a city.
func cityStatus(w *computev1alpha.Workload, placement, city string) (computev1alpha.WorkloadCityStatus, bool) {
	for _, p := range w.Status.Placements {
		if p.Name != placement {
			continue
		}
		for _, c := range p.Cities {
			if c.CityCode == city {
				return c, true
			}
		}
	}
	return computev1alpha.WorkloadCityStatus{}, false
}

// cellReport is the status a cell reports for a WorkloadDeployment.
type cellReport struct {
	desired, ready int32
	reason         string
}

// reportAsCell writes a WorkloadDeployment's status as its cell would: for
// its current generation, with ready of desired replicas ready; Available
// True when any is ready, else False with reason.
func reportAsCell(t *testing.T, plane string, wd computev1alpha.WorkloadDeployment, r cellReport) {
	t.Helper()
	g := gomega.NewWithT(t)
	g.Eventually(func() error {
		cur := &computev1alpha.WorkloadDeployment{}
		if err := clients[plane].Get(context.Background(), client.ObjectKeyFromObject(&wd), cur); err != nil {
			return err
		}
		cur.Status.ObservedGeneration = cur.Generation
		cur.Status.ReplicaCounts = computev1alpha.ReplicaCounts{
			Replicas: r.desired, CurrentReplicas: r.ready, UpdatedReplicas: r.desired,
			ReadyReplicas: r.ready, DesiredReplicas: r.desired,
		}
		avail := metav1.Condition{Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionTrue,
			Reason: computev1alpha.ReasonReplicasAvailable, Message: fmt.Sprintf("%d of %d ready", r.ready, r.desired)}
		if r.ready == 0 {
			avail.Status, avail.Reason = metav1.ConditionFalse, r.reason
			avail.Message = "instance " + cur.Name + "-0: " + r.reason
		}
		meta.SetStatusCondition(&cur.Status.Conditions, avail)
		meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: computev1alpha.ConditionProgressing,
			Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonRolloutComplete, Message: "done"})
		return clients[plane].Status().Update(context.Background(), cur)
	}, timeout, interval).Should(gomega.Succeed())
}

// isWebhookDenial reports whether err is a denial by compute's validating
// webhook.
func isWebhookDenial(err error) bool {
	return err != nil && strings.Contains(err.Error(), `admission webhook "validate.workloads.compute.datumapis.com" denied the request`)
}

// causeFields returns the field paths of an API error's causes.
func causeFields(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	var out []string
	for _, c := range status.Status().Details.Causes {
		out = append(out, c.Field)
	}
	return out
}

// namespaceObject returns a namespace to create.
func namespaceObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// revisionsOf returns the ControllerRevisions of w by revision number.
func revisionsOf(g gomega.Gomega, plane string, w *computev1alpha.Workload) map[int64]appsv1.ControllerRevision {
	var list appsv1.ControllerRevisionList
	g.Expect(clients[plane].List(context.Background(), &list, client.InNamespace(w.Namespace),
		client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(w.UID)})).To(gomega.Succeed())
	out := map[int64]appsv1.ControllerRevision{}
	for _, r := range list.Items {
		out[r.Revision] = r
	}
	return out
}

// grantRole gives user the rules in namespace ns of projectA, through a
// Role named role and a RoleBinding named after the user and the role.
func grantRole(t *testing.T, ns, role, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	g := gomega.NewWithT(t)
	admin := env.Client(projectA)
	g.Expect(admin.Create(context.Background(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: ns}, Rules: rules})).To(gomega.Succeed())
	g.Expect(admin.Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: user}},
	})).To(gomega.Succeed())
}

// clientAs is a client of projectA authenticated as user (in groups).
func clientAs(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cfg, err := env.Plane(projectA).ClientConfig(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	return env.ClientFor(cfg)
}
