package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/phases"
)

// DeploymentCitiesName names the ConfigMap of each federation namespace
// that maps the name of every WorkloadDeployment federated there to its
// city. The hub's admission policy compute-cell-instance-owners
// (config/rbac/cell-isolation/hub) reads it as its parameter: a cell may
// write back only the Instances of a deployment of its own city, whatever
// it labels them. Only the management role writes it; a cell cannot.
const DeploymentCitiesName = "compute-deployment-cities"

// grantWait is how long the federator waits for the companions role of a
// new federation namespace before writing there again.
const grantWait = 250 * time.Millisecond

// The map is written with the companions' rights of the federation
// namespace (compute-federation-companions, bound there by the management
// role itself).
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;patch

// cityRecords remembers which deployment's city is recorded, so a
// deployment costs one write (and its namespace one read after a restart),
// not one per reconcile.
type cityRecords struct{ recorded sync.Map }

func cityKey(namespace, name, city string) string { return namespace + "/" + name + "=" + city }

// recordCity makes sure the federation namespace's deployment-city map
// names s.wd's city before its hub copy exists, so the cell's write-backs
// of its Instances are admitted from the first. Entries are never removed:
// a deployment's hub Instances outlive its copy for a while, and a name
// used again for another city is written over.
func (r *Reconciler) recordCity(ctx context.Context, s *scope) (phases.Result, error) {
	key := cityKey(s.hubNamespace, s.wd.Name, s.wd.Spec.CityCode)
	if _, ok := r.cities.recorded.Load(key); ok {
		return phases.Result{}, nil
	}
	cm := &corev1.ConfigMap{}
	err := r.HubReader.Get(ctx, client.ObjectKey{Namespace: s.hubNamespace, Name: DeploymentCitiesName}, cm)
	if err == nil {
		// What the map already says of the namespace's other deployments
		// is recorded too: one read per namespace after a restart.
		for name, city := range cm.Data {
			r.cities.recorded.Store(cityKey(s.hubNamespace, name, city), true)
		}
	}
	switch {
	case err == nil && cm.Data[s.wd.Name] == s.wd.Spec.CityCode:
	case err == nil:
		patch, _ := json.Marshal(map[string]any{"data": map[string]string{s.wd.Name: s.wd.Spec.CityCode}})
		err = r.Hub.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
	case apierrors.IsNotFound(err):
		err = r.Hub.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.hubNamespace, Name: DeploymentCitiesName,
				Labels: map[string]string{computev1alpha.ManagedByLabel: computev1alpha.ManagedByCompute}},
			Data: map[string]string{s.wd.Name: s.wd.Spec.CityCode},
		})
		if apierrors.IsAlreadyExists(err) {
			// Another deployment of the namespace made it: read it again.
			return phases.Result{}, fmt.Errorf("the ConfigMap %s/%s was created meanwhile: %w", s.hubNamespace, DeploymentCitiesName, err)
		}
	}
	if names.NotGrantedYet(err, s.hubNamespaceCreated, r.Clock.Now()) {
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the companions role to be bound in the new federation namespace", "namespace", s.hubNamespace)
		return phases.Result{RequeueAfter: grantWait, Stop: true}, nil
	}
	if err != nil {
		return phases.Result{}, fmt.Errorf("failed to record the city of WorkloadDeployment %s in %s/%s: %w", s.wd.Name, s.hubNamespace, DeploymentCitiesName, err)
	}
	r.cities.recorded.Store(key, true)
	return phases.Result{}, nil
}
