package debugapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// destination is where an Instance's Pod runs: the city, the federation
// namespace (the Pod's namespace in the cell) and the Pod's name.
type destination struct {
	city, namespace, pod string
}

// resolve finds the city and federation namespace of the project
// Instance of t, refusing at once when the city's cell is not heard from.
func (s *Server) resolve(ctx context.Context, t target) (destination, error) {
	inst := &computev1alpha.Instance{}
	if err := s.cfg.Project.Get(ctx, client.ObjectKey{Namespace: t.namespace, Name: t.name}, inst); err != nil {
		if apierrors.IsNotFound(err) {
			return destination{}, &statusError{http.StatusNotFound, metav1.StatusReasonNotFound,
				fmt.Sprintf("instance %q not found in namespace %q", t.name, t.namespace)}
		}
		return destination{}, fmt.Errorf("failed to read Instance %s/%s: %w", t.namespace, t.name, err)
	}
	city := inst.Labels[computev1alpha.CityCodeLabel]
	wdName := inst.Labels[computev1alpha.WorkloadDeploymentNameLabel]
	if city == "" || wdName == "" {
		return destination{}, &statusError{http.StatusConflict, metav1.StatusReasonConflict,
			fmt.Sprintf("instance %q carries no city or WorkloadDeployment label: it is not a projection of a running instance", t.name)}
	}
	if err := s.checkReachable(ctx, inst, city); err != nil {
		return destination{}, err
	}
	wd := &computev1alpha.WorkloadDeployment{}
	if err := s.cfg.Project.Get(ctx, client.ObjectKey{Namespace: t.namespace, Name: wdName}, wd); err != nil {
		return destination{}, fmt.Errorf("failed to read WorkloadDeployment %s/%s of instance %q: %w", t.namespace, wdName, t.name, err)
	}
	hubNS := wd.Annotations[computev1alpha.FederationNamespaceAnnotation]
	if hubNS == "" {
		return destination{}, &statusError{http.StatusConflict, metav1.StatusReasonConflict,
			fmt.Sprintf("WorkloadDeployment %q of instance %q is not federated yet", wdName, t.name)}
	}
	return destination{city: city, namespace: hubNS, pod: t.name}, nil
}

// checkReachable refuses, naming the city, when the Workload's status
// says the city's cell is unreachable: compute's reachability verdict
// (the cell's hub Lease, internal/controller/cellhealth), computed once on
// the server.
func (s *Server) checkReachable(ctx context.Context, inst *computev1alpha.Instance, city string) error {
	name := inst.Labels[computev1alpha.WorkloadNameLabel]
	if name == "" {
		return nil
	}
	w := &computev1alpha.Workload{}
	if err := s.cfg.Project.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: name}, w); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("failed to read Workload %s/%s: %w", inst.Namespace, name, err)
	}
	for _, p := range w.Status.Placements {
		for _, c := range p.Cities {
			if strings.EqualFold(c.CityCode, city) && c.Stale {
				return unreachable(city, "its cell has not been heard from")
			}
		}
	}
	return nil
}

// unreachable is the error of a city that cannot be reached.
func unreachable(city, why string) error {
	return &statusError{http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
		fmt.Sprintf("city %s is unreachable: %s; its instances' logs and exec are unavailable until it is back", city, why)}
}
