//go:build bench

package federation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// rawRoundTrip is Karmada's own round trip, P1's floor at its shape: one
// Deployment of 2 replicas per city created in the hub (a namespace of its
// own, a PropagationPolicy per city as compute's), each propagated to its
// cell, where the benchmark writes its status once (2 ready, as a
// controller would: the cells run no Deployment controller) the moment it
// arrives; the clock stops when a watch of the hub has seen all three
// Deployments report 2 ready (Karmada's built-in status reflection and
// aggregation). What Karmada alone costs to take a placement there and
// bring its status back, measured the way P1 is.
func (e *env) rawRoundTrip(b *testing.B, ctx context.Context, runs int) []time.Duration {
	b.Helper()
	const ns = "bench-roundtrip"
	e.cityPolicies(b, ctx, ns, "apps/v1", "Deployment")
	s := &scaleWatch{changed: make(chan struct{}, 1)}
	ready := map[string]bool{}
	follow(ctx, b, e.hub, &appsv1.DeploymentList{}, ns, func(obj client.Object, deleted bool) {
		d := obj.(*appsv1.Deployment)
		ready[d.Name] = !deleted && d.Status.ReadyReplicas == replicasPerCity
	}, s)
	for _, c := range e.cells {
		statusOnArrival(ctx, b, c, &appsv1.DeploymentList{}, ns, s, func(obj client.Object) []byte {
			return fmt.Appendf(nil, `{"status":{"observedGeneration":%d,"replicas":%d,"updatedReplicas":%d,"readyReplicas":%d,"availableReplicas":%d}}`,
				obj.GetGeneration(), replicasPerCity, replicasPerCity, replicasPerCity, replicasPerCity)
		})
	}
	var out []time.Duration
	for i := range runs {
		began := time.Now()
		var names []string
		for _, city := range benchCities {
			d := roundTripDeployment(ns, fmt.Sprintf("rt-%s-%d", strings.ToLower(city), i), city)
			must(b, e.hub.Create(ctx, d))
			names = append(names, d.Name)
		}
		if !s.waitFor(time.Minute, func() bool {
			for _, n := range names {
				if !ready[n] {
					return false
				}
			}
			return true
		}) {
			b.Fatalf("round trip %d: the hub Deployments did not report their cells' status within a minute", i)
		}
		out = append(out, time.Since(began))
	}
	return out
}

// roundTripDeployment is one of the round trip's Deployments.
func roundTripDeployment(ns, name, city string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	replicas := int32(replicasPerCity)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{computev1alpha.CityCodeTopologyLabel: city}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/citycells/hello:1.0"}}},
			},
		},
	}
}
