package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// projectionGuard denies writes to projected Instances by anyone but the
// manager.
type projectionGuard struct {
	clusters   Clusters
	writers    Identities
	deleters   Identities
	identities *identityCache
}

var _ admission.Handler = &projectionGuard{}

// Handle admits or denies one write to an Instance.
func (g *projectionGuard) Handle(ctx context.Context, req admission.Request) admission.Response {
	newMeta, err := objectMeta(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	oldMeta, err := objectMeta(req.OldObject.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if !isProjection(newMeta) && !isProjection(oldMeta) {
		return admission.Allowed("")
	}
	if ProjectionWriteAllowed(req.Operation, req.UserInfo, "", g.writers, g.deleters) {
		return admission.Allowed("")
	}
	cl, err := clusterOf(ctx, g.clusters)
	if err != nil {
		return admission.Errored(http.StatusServiceUnavailable, err)
	}
	manager, err := g.identities.user(ctx, cl)
	if err != nil {
		return admission.Errored(http.StatusServiceUnavailable, err)
	}
	if ProjectionWriteAllowed(req.Operation, req.UserInfo, manager, g.writers, g.deleters) {
		return admission.Allowed("")
	}
	return admission.Denied(projectionDenial(req, newMeta, oldMeta))
}

// ProjectionWriteAllowed decides whether user may perform op on a projected
// Instance: the manager (its user name in the cluster, when known) and the
// writers may do anything, the deleters may delete, nobody else may write.
func ProjectionWriteAllowed(op admissionv1.Operation, user authenticationv1.UserInfo, manager string, writers, deleters Identities) bool {
	if manager != "" && user.Username == manager {
		return true
	}
	if matches(user, writers) {
		return true
	}
	return op == admissionv1.Delete && matches(user, deleters)
}

// matches reports whether user is one of ids or in one of its groups.
func matches(user authenticationv1.UserInfo, ids Identities) bool {
	if user.Username != "" && slices.Contains(ids.Users, user.Username) {
		return true
	}
	return slices.ContainsFunc(user.Groups, func(g string) bool { return slices.Contains(ids.Groups, g) })
}

// projectionDenial explains a denial and what to do instead.
func projectionDenial(req admission.Request, metas ...*metav1.ObjectMeta) string {
	workload, city := "", ""
	for _, m := range metas {
		if m == nil {
			continue
		}
		workload = firstNonEmpty(workload, m.Labels[computev1alpha.WorkloadNameLabel])
		city = firstNonEmpty(city, m.Labels[computev1alpha.CityCodeLabel])
	}
	msg := fmt.Sprintf("Instance %s is a read-only projection of an instance running in a cell", req.Name)
	if city != "" {
		msg += " (" + city + ")"
	}
	if workload != "" {
		msg += fmt.Sprintf("; change Workload %s instead", workload)
	} else {
		msg += "; change its Workload instead"
	}
	return msg + " (only compute writes projections)"
}

// firstNonEmpty returns a unless it is empty, else b.
func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// objectMeta decodes the metadata of a raw object; nil for an empty one.
func objectMeta(raw []byte) (*metav1.ObjectMeta, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("failed to decode the Instance: %w", err)
	}
	return &obj.Metadata, nil
}

// isProjection reports whether an object is labelled as a projection.
func isProjection(m *metav1.ObjectMeta) bool {
	if m == nil {
		return false
	}
	_, ok := m.Labels[computev1alpha.ProjectionLabel]
	return ok
}

// identityCache remembers the user name the manager has in each project
// cluster. It asks each cluster once (a SelfSubjectReview), and again when
// the cluster's client configuration is replaced.
type identityCache struct {
	mu    sync.Mutex
	users map[*rest.Config]string
}

// newIdentityCache returns an empty cache.
func newIdentityCache() *identityCache {
	return &identityCache{users: map[*rest.Config]string{}}
}

// user returns the manager's user name in cl.
func (c *identityCache) user(ctx context.Context, cl cluster.Cluster) (string, error) {
	cfg := cl.GetConfig()
	c.mu.Lock()
	name, ok := c.users[cfg]
	c.mu.Unlock()
	if ok {
		return name, nil
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := cl.GetClient().Create(ctx, review); err != nil {
		return "", fmt.Errorf("failed to learn compute-manager's identity in the project cluster: %w", err)
	}
	name = review.Status.UserInfo.Username
	c.mu.Lock()
	c.users[cfg] = name
	c.mu.Unlock()
	return name, nil
}
