// Package locations answers "which cities may this project namespace use,
// and can it use them now?" from the LocationBindings in the namespace and
// the Locations they bind. The WorkloadReconciler uses the answer to decide
// which placement cities get a WorkloadDeployment; the admission webhook
// uses it to reject cities the project is not bound to.
//
// A city is bound when a LocationBinding (not being deleted) in the
// namespace names a Location whose spec.topology carries that city code. It
// is ready when one of its bound Locations has Ready=True. A binding whose
// Location does not exist, or has no city code, binds no city.
package locations

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// City is a city bound to a project namespace.
type City struct {
	// Code is the airport-style city code.
	Code string
	// Location is the Location serving the city: the first ready one by
	// namespace/name, or the first one when none is ready.
	Location networkingv1alpha.LocationReference
	// Ready reports whether Location accepts workloads.
	Ready bool
	// Reason and Message explain why the city is not ready; empty when it
	// is.
	Reason, Message string
	// Locations are every bound Location serving the city, sorted by
	// namespace and name; Location is one of them.
	Locations []Location
}

// Location is one bound Location.
type Location struct {
	// Ref names the Location.
	Ref networkingv1alpha.LocationReference
	// CityCode is the city it serves.
	CityCode string
	// Topology are its topology labels, which placements select on.
	Topology map[string]string
	// Ready reports whether it accepts workloads; Reason and Message say
	// why not.
	Ready           bool
	Reason, Message string
}

// All returns every bound Location, sorted by namespace and name.
func (c Cities) All() []Location {
	var out []Location
	for _, city := range c {
		out = append(out, city.Locations...)
	}
	slices.SortFunc(out, func(a, b Location) int {
		return cmp.Or(cmp.Compare(a.Ref.Namespace, b.Ref.Namespace), cmp.Compare(a.Ref.Name, b.Ref.Name))
	})
	return out
}

// Bind adds the bound Location l to c as Resolve would (a city's Location
// is its first ready one, else its first): for callers that know their
// Locations without reading them, such as tests and the CLI's in-memory
// planes.
func (c Cities) Bind(l Location) {
	city, seen := c[l.CityCode]
	city.Code, city.Locations = l.CityCode, append(city.Locations, l)
	if !seen || (!city.Ready && l.Ready) {
		city.Location, city.Ready, city.Reason, city.Message = l.Ref, l.Ready, l.Reason, l.Message
	}
	c[l.CityCode] = city
}

// ReadyCities binds one ready Location per city code, named after the
// city in lower case, in namespace: the simplest project, for tests and
// in-memory planes.
func ReadyCities(namespace string, codes ...string) Cities {
	c := Cities{}
	for _, code := range codes {
		c.Bind(Location{
			Ref:      networkingv1alpha.LocationReference{Namespace: namespace, Name: strings.ToLower(code)},
			CityCode: code,
			Topology: map[string]string{networkingv1alpha.CityCodeTopologyKey: code},
			Ready:    true,
		})
	}
	return c
}

// DescribeLocations lists the bound Locations' names for a message:
// "dfw-1, lhr-1", or "none".
func (c Cities) DescribeLocations() string {
	all := c.All()
	if len(all) == 0 {
		return "none"
	}
	names := make([]string, len(all))
	for i, l := range all {
		names[i] = l.Ref.Name
	}
	return strings.Join(slices.Compact(names), ", ")
}

// Cities are the cities bound to one project namespace, by city code.
type Cities map[string]City

// Codes returns the bound city codes, sorted.
func (c Cities) Codes() []string {
	out := make([]string, 0, len(c))
	for code := range c {
		out = append(out, code)
	}
	slices.Sort(out)
	return out
}

// Describe lists the bound cities for a message: "DFW, LHR", or "none".
func (c Cities) Describe() string {
	if len(c) == 0 {
		return "none"
	}
	return strings.Join(c.Codes(), ", ")
}

// Resolve computes the cities the bindings give access to. locations are
// the Locations the bindings may name; Resolve ignores the others. It is
// pure and deterministic: the order of its inputs does not matter.
func Resolve(bindings []networkingv1alpha.LocationBinding, locations []networkingv1alpha.Location) Cities {
	byRef := make(map[types.NamespacedName]*networkingv1alpha.Location, len(locations))
	for i := range locations {
		l := &locations[i]
		byRef[types.NamespacedName{Namespace: l.Namespace, Name: l.Name}] = l
	}
	bound := map[types.NamespacedName]bool{}
	for i := range bindings {
		b := &bindings[i]
		if b.DeletionTimestamp != nil {
			continue
		}
		bound[types.NamespacedName{Namespace: b.Spec.LocationRef.Namespace, Name: b.Spec.LocationRef.Name}] = true
	}

	// Visit bound Locations in a fixed order so the chosen Location of a
	// city served by several is stable.
	refs := make([]types.NamespacedName, 0, len(bound))
	for ref := range bound {
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})

	cities := Cities{}
	for _, ref := range refs {
		l, ok := byRef[ref]
		if !ok {
			continue
		}
		code := l.Spec.Topology[networkingv1alpha.CityCodeTopologyKey]
		if code == "" {
			continue
		}
		c := cityOf(code, l)
		prev, seen := cities[code]
		all := slices.Concat(prev.Locations, []Location{{
			Ref: c.Location, CityCode: code, Topology: l.Spec.Topology,
			Ready: c.Ready, Reason: c.Reason, Message: c.Message,
		}})
		if seen && (prev.Ready || !c.Ready) {
			c = prev
		}
		c.Locations = all
		cities[code] = c
	}
	return cities
}

// cityOf describes the city code served by l.
func cityOf(code string, l *networkingv1alpha.Location) City {
	c := City{
		Code:     code,
		Location: networkingv1alpha.LocationReference{Namespace: l.Namespace, Name: l.Name},
	}
	ready := meta.FindStatusCondition(l.Status.Conditions, networkingv1alpha.LocationConditionReady)
	switch {
	case l.DeletionTimestamp != nil:
		c.Reason = "LocationDeleting"
		c.Message = fmt.Sprintf("Location %s/%s serving %s is being deleted", l.Namespace, l.Name, code)
	case ready == nil:
		c.Reason = "ReadyUnknown"
		c.Message = fmt.Sprintf("Location %s/%s serving %s has not reported readiness yet", l.Namespace, l.Name, code)
	case ready.Status != metav1.ConditionTrue:
		c.Reason = ready.Reason
		c.Message = fmt.Sprintf("Location %s/%s serving %s is not ready", l.Namespace, l.Name, code)
		if ready.Message != "" {
			c.Message += ": " + ready.Message
		}
	default:
		c.Ready = true
	}
	return c
}

// Load reads the LocationBindings of namespace and the Locations they name
// through reader, and resolves them. A binding naming a Location that does
// not exist binds nothing; any other read error is returned.
func Load(ctx context.Context, reader client.Reader, namespace string) (Cities, error) {
	var bindings networkingv1alpha.LocationBindingList
	if err := reader.List(ctx, &bindings, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("failed to list LocationBindings in namespace %s: %w", namespace, err)
	}
	seen := map[types.NamespacedName]bool{}
	locs := make([]networkingv1alpha.Location, 0, len(bindings.Items))
	for _, b := range bindings.Items {
		ref := types.NamespacedName{Namespace: b.Spec.LocationRef.Namespace, Name: b.Spec.LocationRef.Name}
		if seen[ref] || ref.Name == "" {
			continue
		}
		seen[ref] = true
		var l networkingv1alpha.Location
		if err := reader.Get(ctx, ref, &l); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("failed to get Location %s bound in namespace %s: %w", ref, namespace, err)
		}
		locs = append(locs, l)
	}
	return Resolve(bindings.Items, locs), nil
}

// SelectedCityCodes returns the city codes a selector requires
// topology.datum.net/city-code to be one of (matchLabels or an In
// requirement), sorted; none when it does not constrain the city that way.
func SelectedCityCodes(ls *metav1.LabelSelector) []string {
	if ls == nil {
		return nil
	}
	var out []string
	if code, ok := ls.MatchLabels[computev1alpha.CityCodeTopologyLabel]; ok {
		out = append(out, code)
	}
	for _, r := range ls.MatchExpressions {
		if r.Key == computev1alpha.CityCodeTopologyLabel && r.Operator == metav1.LabelSelectorOpIn {
			out = append(out, r.Values...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
