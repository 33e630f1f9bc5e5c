package clitest

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
)

// LocationNamespace holds the Locations tests bind.
const LocationNamespace = "datum-locations"

// EnsureLocation creates the Location serving city (ready or not) if it
// does not exist yet.
func EnsureLocation(ctx context.Context, c client.Client, city string, ready bool) (*networkingv1alpha.Location, error) {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: LocationNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	l := &networkingv1alpha.Location{ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(city), Namespace: LocationNamespace},
		Spec: networkingv1alpha.LocationSpec{LocationClassName: networkingv1alpha.LocationClassDatumManaged,
			Topology: map[string]string{networkingv1alpha.CityCodeTopologyKey: city}}}
	if err := c.Create(ctx, l); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		return l, c.Get(ctx, client.ObjectKeyFromObject(l), l)
	}
	status := metav1.ConditionTrue
	if !ready {
		status = metav1.ConditionFalse
	}
	meta.SetStatusCondition(&l.Status.Conditions, metav1.Condition{Type: networkingv1alpha.LocationConditionReady,
		Status: status, Reason: "Provisioned", Message: "the location accepts workloads", LastTransitionTime: metav1.Now()})
	return l, c.Status().Update(ctx, l)
}

// BindCities enables cities for namespace: a ready Location per city and
// a LocationBinding to it.
func BindCities(ctx context.Context, c client.Client, namespace string, cities ...string) error {
	for _, city := range cities {
		l, err := EnsureLocation(ctx, c, city, true)
		if err != nil {
			return err
		}
		b := &networkingv1alpha.LocationBinding{ObjectMeta: metav1.ObjectMeta{Name: l.Name, Namespace: namespace},
			Spec: networkingv1alpha.LocationBindingSpec{LocationRef: networkingv1alpha.LocationReference{Name: l.Name, Namespace: l.Namespace}}}
		if err := c.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// BindCities enables cities for the harness namespace.
func (h *Harness) BindCities(cities ...string) {
	h.T.Helper()
	if err := BindCities(context.Background(), h.Client, h.Namespace, cities...); err != nil {
		h.T.Fatalf("bind %v: %v", cities, err)
	}
}
