//go:build bench

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/restart"
)

// images are the tags the rollouts move among.
var images = []string{"ghcr.io/citycells/hello:1.0", "ghcr.io/citycells/hello:1.1", "ghcr.io/citycells/hello:1.2", "ghcr.io/citycells/hello:2.0"}

const (
	// minLive and maxLive bound the Workloads the driver keeps.
	minLive, maxLive = 2, 5
	// placement is the name of each Workload's one placement.
	placement = "edge"
)

// changeDriver edits the Workloads of the namespace as users would, one
// change every 2–5 s: it reads the Workload and writes it back (a conflict
// is retried; a refused or unanswered write is counted and the next tick
// goes on), so what it
// believes never matters at the end — the checks read the last spec from
// the project.
type changeDriver struct {
	c      client.Client
	rng    *rand.Rand
	next   int
	live   []string
	kinds  map[string]int
	failed int
}

func newChangeDriver(c client.Client, rng *rand.Rand) *changeDriver {
	return &changeDriver{c: c, rng: rng, kinds: map[string]int{}}
}

// run makes changes until ctx ends; a change begun is finished (each call
// bounded by the client's timeout), so the end of the soak is not counted
// as a refused write.
func (d *changeDriver) run(ctx context.Context) {
	begin := time.Now()
	for sleepUntil(ctx, time.Now().Add(time.Duration(2000+d.rng.IntN(3001))*time.Millisecond)) {
		kind, err := d.step(context.WithoutCancel(ctx))
		if err != nil {
			d.failed++
			fmt.Fprintf(os.Stderr, "chaos change t+%s: %s failed: %v\n", time.Since(begin).Round(time.Second), kind, err)
		}
	}
}

// step makes one random change and returns its kind.
func (d *changeDriver) step(ctx context.Context) (string, error) {
	r := d.rng.IntN(100)
	switch {
	case len(d.live) < minLive || (r < 12 && len(d.live) < maxLive):
		return "create", d.create(ctx)
	case r < 22 && len(d.live) > minLive:
		return "delete", d.delete(ctx)
	}
	name := d.live[d.rng.IntN(len(d.live))]
	switch {
	case r < 45:
		scale := int32(1 + d.rng.IntN(2))
		return "scale", d.update(ctx, "scale", name, func(w *computev1alpha.Workload) bool {
			if w.Spec.Placements[0].ScaleSettings.MinReplicas == scale {
				return false
			}
			w.Spec.Placements[0].ScaleSettings.MinReplicas = scale
			return true
		})
	case r < 75:
		image := images[d.rng.IntN(len(images))]
		return "image", d.update(ctx, "image", name, func(w *computev1alpha.Workload) bool {
			c := &w.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
			if c.Image == image {
				return false
			}
			c.Image = image
			return true
		})
	case r < 90:
		return "restart", d.restart(ctx, name, "")
	default:
		return "restart city", d.restart(ctx, name, cities[d.rng.IntN(len(cities))])
	}
}

// newWorkload returns a Workload of one container in every city, scaled 1
// or 2 per city; one in two rolls its cities in waves.
func (d *changeDriver) newWorkload(name string) *computev1alpha.Workload {
	w := &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	w.Spec.Template.Spec.Runtime = computev1alpha.InstanceRuntimeSpec{
		Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
		Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
			Name: "app", Image: images[d.rng.IntN(len(images))],
		}}},
	}
	w.Spec.Placements = []computev1alpha.WorkloadPlacement{{
		Name: placement, CityCodes: cities, ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: int32(1 + d.rng.IntN(2))},
	}}
	if d.rng.IntN(2) == 0 {
		order := slices.Clone(cities)
		d.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		w.Spec.Rollout = &computev1alpha.WorkloadRollout{
			Strategy: computev1alpha.WavesCityRollout,
			Waves:    []computev1alpha.RolloutWave{{CityCodes: order[:1]}, {CityCodes: order[1:]}},
		}
	}
	return w
}

func (d *changeDriver) create(ctx context.Context) error {
	name := fmt.Sprintf("chaos-%d", d.next)
	d.next++
	w := d.newWorkload(name)
	err := d.c.Create(ctx, w)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		// The write may have happened although the answer was lost: keep
		// the name only if the Workload is there.
		if d.c.Get(ctx, client.ObjectKeyFromObject(w), &computev1alpha.Workload{}) != nil {
			return err
		}
	}
	d.live = append(d.live, name)
	d.kinds["create"]++
	return nil
}

func (d *changeDriver) delete(ctx context.Context) error {
	i := d.rng.IntN(len(d.live))
	w := &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: d.live[i]}}
	if err := d.c.Delete(ctx, w); client.IgnoreNotFound(err) != nil {
		return err
	}
	d.live = slices.Delete(d.live, i, i+1)
	d.kinds["delete"]++
	return nil
}

// update reads a Workload, changes it with mutate and writes it back;
// mutate returns false when there is nothing to change.
// A conflict (the controllers write the Workload's status and finalizer
// meanwhile) is retried as kubectl edit would.
func (d *changeDriver) update(ctx context.Context, kind, name string, mutate func(*computev1alpha.Workload) bool) error {
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := &computev1alpha.Workload{}
		if err := d.c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, w); err != nil {
			return err
		}
		if changed = mutate(w); !changed {
			return nil
		}
		return d.c.Update(ctx, w)
	})
	if err != nil {
		return d.gone(name, err)
	}
	if changed {
		d.kinds[kind]++
	}
	return nil
}

// restart restarts a Workload, or one city of it, with the patch
// `datumctl-compute restart` sends.
func (d *changeDriver) restart(ctx context.Context, name, city string) error {
	w := &computev1alpha.Workload{}
	if err := d.c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, w); err != nil {
		return d.gone(name, err)
	}
	current := w.Spec.Template.Metadata.Annotations[computev1alpha.RestartedAtAnnotation]
	if city != "" {
		current = w.Annotations[restart.CityRestartedAtAnnotation(city)]
	}
	at := restartTime(time.Now(), current)
	patch, err := restart.Patch(w, city, at)
	if err != nil {
		return err
	}
	if err := d.c.Patch(ctx, w, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return d.gone(name, err)
	}
	if city != "" {
		d.kinds["restart city"]++
	} else {
		d.kinds["restart"]++
	}
	return nil
}

// restartTime is now, or a second after the previous restart when that is
// not earlier (the annotation has a resolution of a second, so two
// restarts in one second would be one).
func restartTime(now time.Time, previous string) string {
	now = now.UTC().Truncate(time.Second)
	if prev, err := time.Parse(time.RFC3339, previous); err == nil && !now.After(prev) {
		now = prev.Add(time.Second)
	}
	return now.Format(time.RFC3339)
}

// gone forgets a Workload that is not found (a delete whose answer was
// lost) and returns err otherwise.
func (d *changeDriver) gone(name string, err error) error {
	if apierrors.IsNotFound(err) {
		d.live = slices.DeleteFunc(d.live, func(n string) bool { return n == name })
		return nil
	}
	return err
}

func (d *changeDriver) total() int {
	n := 0
	for _, v := range d.kinds {
		n += v
	}
	return n
}

func (d *changeDriver) byKind() string { return countsString(d.kinds) }
