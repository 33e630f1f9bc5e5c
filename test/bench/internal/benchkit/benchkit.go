// Package benchkit holds what the benchmarks on the local platform share:
// the clients of its planes, a project namespace bound to its cities, the
// way a figure is printed and the percentile it is read with. It is copied
// out of test/bench/faults so that the chaos soak (test/bench/chaos) does
// not import another benchmark's package.
package benchkit

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/projects"
)

// Report prints a line of figures to stderr (benchmark logs are cut) and
// to the benchmark log.
func Report(b *testing.B, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	fmt.Fprintln(os.Stderr, line)
	b.Log(line)
}

// Pick returns the q-th percentile (0-100) of sorted values, nearest rank;
// the zero value when there are none.
func Pick[T any](sorted []T, q int) T {
	var zero T
	if len(sorted) == 0 {
		return zero
	}
	i := (q*len(sorted)+99)/100 - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Scheme knows the Kubernetes kinds, compute's, the networking kinds
// (LocationBinding) and the quota kinds (ResourceClaim, which compute-quota
// keeps in the project plane).
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, computev1alpha.AddToScheme,
		networkingv1alpha.AddToScheme, quotav1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// Client returns a client of a plane of p; a non-zero timeout bounds each
// request (a benchmark that breaks the platform must not hang on a call).
func Client(b *testing.B, p *platform.Platform, plane string, timeout time.Duration) client.Client {
	cfg := rest.CopyConfig(p.Config(plane))
	cfg.Timeout = timeout
	// The apiserver's warnings (a field it defaults, say) go to stderr
	// once each, not through controller-runtime's logger, which no
	// benchmark sets.
	cfg.WarningHandler = rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// ProjectNamespace creates the project namespace name, bound (with a Ready
// LocationBinding) to each of cities, and returns the federation namespace
// compute maps it to in the hub and the cells.
func ProjectNamespace(b *testing.B, ctx context.Context, c client.Client, name string, cities []string) (federation string) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{projects.DefaultProjectLabel: platform.DefaultProject}}}
	if err := c.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	for _, city := range cities {
		bd := &networkingv1alpha.LocationBinding{ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(city), Namespace: ns.Name}}
		bd.Spec.LocationRef = networkingv1alpha.LocationReference{Namespace: platform.LocationNamespace, Name: strings.ToLower(city)}
		if err := c.Create(ctx, bd); err != nil {
			b.Fatal(err)
		}
		meta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{
			Type: networkingv1alpha.LocationBindingConditionReady, Status: metav1.ConditionTrue, Reason: "Bench", Message: "bound by the benchmark",
		})
		if err := c.Status().Update(ctx, bd); err != nil {
			b.Fatal(err)
		}
	}
	return names.FederationNamespace(ns.UID)
}
