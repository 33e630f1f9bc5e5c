package cmdutil

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/locations"
)

// GetWorkload reads the workload name; a missing one is an error that
// says how to list workloads.
func (f *Factory) GetWorkload(ctx context.Context, c *Clients, name string) (*computev1alpha.Workload, error) {
	var w computev1alpha.Workload
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &w); err != nil {
		return nil, f.WorkloadError(err, c.Namespace, name)
	}
	return &w, nil
}

// WorkloadError turns a NotFound error for workload name into one that
// says how to list workloads; other errors are wrapped.
func (f *Factory) WorkloadError(err error, namespace, name string) error {
	if apierrors.IsNotFound(err) {
		return WithHints(fmt.Errorf("workload %q not found in namespace %s", name, namespace),
			"List the workloads with: "+f.Cmd("workloads"))
	}
	return fmt.Errorf("cannot read workload %s: %w", name, err)
}

// WorkloadCities returns the city codes of w's placements (PlacementCities
// of each), sorted, once each.
func WorkloadCities(w *computev1alpha.Workload) []string {
	var out []string
	for i := range w.Spec.Placements {
		out = append(out, PlacementCities(w, &w.Spec.Placements[i])...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// PlacementCities returns the city codes placement p of w reaches, sorted,
// once each: the ones its spec names (cityCodes, or a locationSelector on
// topology.datum.net/city-code) and the ones its status reports (the
// cities of the Locations it named or selected).
func PlacementCities(w *computev1alpha.Workload, p *computev1alpha.WorkloadPlacement) []string {
	out := slices.Concat(p.CityCodes, locations.SelectedCityCodes(p.LocationSelector))
	for _, ps := range w.Status.Placements {
		if ps.Name != p.Name {
			continue
		}
		for _, c := range ps.Cities {
			if c.CityCode != "" {
				out = append(out, c.CityCode)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Deployments lists the WorkloadDeployments of w (workload-uid label).
func Deployments(ctx context.Context, c *Clients, w *computev1alpha.Workload) ([]computev1alpha.WorkloadDeployment, error) {
	var list computev1alpha.WorkloadDeploymentList
	if err := c.Client.List(ctx, &list, client.InNamespace(w.Namespace),
		client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(w.UID)}); err != nil {
		return nil, fmt.Errorf("cannot list the deployments of workload %s: %w", w.Name, err)
	}
	return list.Items, nil
}

// ClearReplicaOverrides removes the per-city replica overrides (set by
// `scale --city`) of w's deployments in the placements named, so those
// cities follow minReplicas again. It returns the cities cleared; with
// --dry-run client it only says which, with server the server checks it.
func ClearReplicaOverrides(ctx context.Context, c *Clients, w *computev1alpha.Workload, placements []string, dryRun string) ([]string, error) {
	wds, err := Deployments(ctx, c, w)
	if err != nil {
		return nil, err
	}
	cleared := make([]string, 0, len(wds))
	for i := range wds {
		wd := &wds[i]
		if wd.Spec.Replicas == nil || !slices.Contains(placements, wd.Spec.PlacementName) {
			continue
		}
		if dryRun == DryRunClient {
			cleared = append(cleared, wd.Spec.CityCode)
			continue
		}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":null}}`))
		if err := c.Client.Patch(ctx, wd, patch, PatchOptions(dryRun)...); err != nil && !apierrors.IsNotFound(err) {
			return cleared, fmt.Errorf("cannot clear the replica override of %s in %s: %w", w.Name, wd.Spec.CityCode, err)
		}
		cleared = append(cleared, wd.Spec.CityCode)
	}
	slices.Sort(cleared)
	return cleared, nil
}

// JoinCities renders city codes for messages: "DFW, LHR".
func JoinCities(cities []string) string {
	if len(cities) == 0 {
		return "none"
	}
	return strings.Join(cities, ", ")
}
