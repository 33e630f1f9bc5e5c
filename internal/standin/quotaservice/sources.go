package quotaservice

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/lazymetrics"
	"github.com/citycells/compute/internal/locations"
)

// What a cell may claim. A claim labelled compute.datumapis.com/source-cluster
// is a cell's: the quota plane's isolation policy lets a cell (a
// ServiceAccount of compute-cells) create only claims labelled with its own
// name, so the label names the cell that made the claim, as authenticated
// by the API server. The cell's city is what its name ends with (the hub's
// isolation policy reads it the same way: cell-dfw serves DFW). The loop
// refuses a cell's claim when
//
//   - no LocationBinding of the claim's namespace binds a Location of the
//     cell's city: the project's Workloads run in no city the cell serves,
//     so the cell has no Instance of the project to claim for
//     (ReasonCellServesNoBoundCity);
//   - the cell already has MaxClaimsPerSource claims in the plane that came
//     before it, first come first served (ReasonCellClaimCapReached).
//
// Claims without the label (another service's, an administrator's) are not
// judged. A refused claim is answered ValidationFailed, saying why; the
// refusal is an event regarding the claim and counts in RefusalsMetric.
// Granted claims are never judged again: a refusal never revokes.

// sourceIndex indexes ResourceClaims by the cell that made them.
const sourceIndex = "quota.source"

// Refusal reasons: the reason of the event regarding the claim and the
// reason label of RefusalsMetric.
const (
	// ReasonCellServesNoBoundCity: the cell's city is not bound in the
	// claim's namespace.
	ReasonCellServesNoBoundCity = "CellServesNoBoundCity"
	// ReasonCellClaimCapReached: the cell has MaxClaimsPerSource earlier
	// claims outstanding in the plane.
	ReasonCellClaimCapReached = "CellClaimCapReached"
)

// RefusalsMetric counts the cells' claims refused, by reason: each
// refusal written to a claim's status (a claim refused again for the same
// reason, unchanged, is not counted again).
const RefusalsMetric = "compute_quota_claims_refused_total"

var refusals = lazymetrics.CounterVec(RefusalsMetric,
	"ResourceClaims of cells refused by compute-quota, by reason: the cell serves no city bound in the claim's namespace, or has too many claims outstanding.",
	"reason")

// registerMetrics registers RefusalsMetric on controller-runtime's
// registry, once, every reason at zero.
var registerMetrics = lazymetrics.NewSet(func() {
	for _, r := range []string{ReasonCellServesNoBoundCity, ReasonCellClaimCapReached} {
		refusals.WithLabelValues(r)
	}
}, refusals).Register

// CellCity returns the city code a cell serves, from its name: what follows
// its last dash, in upper case ("cell-dfw" and "dfw" serve "DFW"), as the
// hub's isolation policy reads it. A name ending in a dash serves none ("").
func CellCity(cell string) string {
	return strings.ToUpper(cell[strings.LastIndex(cell, "-")+1:])
}

// sourceOf returns the cell that made a claim, or "" when no cell did.
func sourceOf(c *quotav1alpha1.ResourceClaim) string {
	return c.Labels[computev1alpha.SourceClusterLabel]
}

// refusal is why a cell's claim is refused; reason is empty when it is not.
type refusal struct {
	reason, message string
}

// sourceFacts are what refusals are decided from.
type sourceFacts struct {
	// cities are the cities bound in each namespace the judged claims are in.
	cities map[string]locations.Cities
	// rank is the place of each live claim among its cell's live claims,
	// first come first served, from 0.
	rank map[types.UID]int
	// outstanding counts each cell's live claims.
	outstanding map[string]int
}

// rankSources orders the live claims of each cell first come, first served.
func rankSources(claims []*quotav1alpha1.ResourceClaim) (map[types.UID]int, map[string]int) {
	live := make([]*quotav1alpha1.ResourceClaim, 0, len(claims))
	for _, c := range claims {
		if c.DeletionTimestamp == nil && sourceOf(c) != "" {
			live = append(live, c)
		}
	}
	slices.SortFunc(live, creationOrder)
	rank, outstanding := make(map[types.UID]int, len(live)), map[string]int{}
	for _, c := range live {
		s := sourceOf(c)
		rank[c.UID] = outstanding[s]
		outstanding[s]++
	}
	return rank, outstanding
}

// judgeSource decides whether a claim is refused for its source: a claim no
// cell made never is.
func judgeSource(c *quotav1alpha1.ResourceClaim, f sourceFacts, maxPerSource int) refusal {
	cell := sourceOf(c)
	if cell == "" {
		return refusal{}
	}
	city := CellCity(cell)
	cities := f.cities[c.Namespace]
	if _, bound := cities[city]; city == "" || !bound {
		return refusal{reason: ReasonCellServesNoBoundCity, message: notServingMessage(cell, city, c.Namespace, cities)}
	}
	if rank, ok := f.rank[c.UID]; ok && rank >= maxPerSource {
		return refusal{reason: ReasonCellClaimCapReached, message: fmt.Sprintf(
			"refused: cell %s has %d ResourceClaims outstanding in this quota plane and may have at most %d (compute-quota --max-claims-per-source); "+
				"%d of them came before this one. It is evaluated again when the cell's older claims are released; "+
				"if the cell really runs that many Instances of this project, raise --max-claims-per-source",
			cell, f.outstanding[cell], maxPerSource, rank)}
	}
	return refusal{}
}

// notServingMessage says why a cell serving city may not claim in
// namespace, and what to do.
func notServingMessage(cell, city, namespace string, cities locations.Cities) string {
	serves := "serves city " + city
	if city == "" {
		serves = "names no city (a cell is named after the city it serves: <name>-<city code>)"
	}
	return fmt.Sprintf("refused: cell %s %s, and namespace %s binds no Location of that city (bound: %s): "+
		"only a cell serving a city bound to the project claims its quota. "+
		"If the project should run in %s, bind a Location of that city in namespace %s (a LocationBinding) and the claim is evaluated again; "+
		"otherwise delete the claim and find out why cell %s (ServiceAccount compute-cells/%s) claims here",
		cell, serves, namespace, cities.Describe(), cityOrName(city), namespace, cell, cell)
}

// cityOrName names a city for a message.
func cityOrName(city string) string {
	if city == "" {
		return "the cell's city"
	}
	return city
}

// readSources reads, from the cache, what the refusals of claims are
// decided from: the cities bound in their namespaces and every live claim
// of their cells. Only the claims of cells are looked at.
func readSources(ctx context.Context, c client.Reader, claims []*quotav1alpha1.ResourceClaim) (sourceFacts, error) {
	f := sourceFacts{cities: map[string]locations.Cities{}}
	cells := map[string]bool{}
	for _, cl := range claims {
		s := sourceOf(cl)
		if s == "" {
			continue
		}
		cells[s] = true
		if _, ok := f.cities[cl.Namespace]; ok {
			continue
		}
		cities, err := locations.Load(ctx, c, cl.Namespace)
		if err != nil {
			return sourceFacts{}, err
		}
		f.cities[cl.Namespace] = cities
	}
	var all []*quotav1alpha1.ResourceClaim
	for _, s := range slices.Sorted(maps.Keys(cells)) {
		list := &quotav1alpha1.ResourceClaimList{}
		if err := c.List(ctx, list, client.MatchingFields{sourceIndex: s}, client.UnsafeDisableDeepCopy); err != nil {
			return sourceFacts{}, fmt.Errorf("failed to list the ResourceClaims of cell %s: %w", s, err)
		}
		for i := range list.Items {
			all = append(all, &list.Items[i])
		}
	}
	f.rank, f.outstanding = rankSources(all)
	return f, nil
}

// announceRefusal makes a refusal written to a claim visible: a Warning
// event regarding the claim, the log and RefusalsMetric.
func (r *consumerReconciler) announceRefusal(ctx context.Context, c *quotav1alpha1.ResourceClaim, d decision) {
	refusals.WithLabelValues(d.refusal).Inc()
	ctrl.LoggerFrom(ctx).Info("Refused a cell's ResourceClaim", "claim", keyOf(c), "cell", sourceOf(c), "reason", d.refusal, "message", d.message)
	if r.recorder != nil {
		r.recorder.Eventf(c, nil, corev1.EventTypeWarning, d.refusal, "Evaluate", "%s", d.message)
	}
}

// releasedSiblings brings back the consumers of a cell's claims when one of
// its claims goes away while the cell has at least maxPerSource others: a
// claim refused for the cap may now be within it, whatever its consumer.
func releasedSiblings(c client.Reader, maxPerSource int) handler.TypedEventHandler[client.Object, quotav1alpha1.ConsumerRef] {
	enqueue := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[quotav1alpha1.ConsumerRef]) {
		claim, ok := o.(*quotav1alpha1.ResourceClaim)
		if !ok || sourceOf(claim) == "" {
			return
		}
		list := &quotav1alpha1.ResourceClaimList{}
		if err := c.List(ctx, list, client.MatchingFields{sourceIndex: sourceOf(claim)}, client.UnsafeDisableDeepCopy); err != nil {
			return
		}
		live, consumers := 0, map[quotav1alpha1.ConsumerRef]bool{}
		for i := range list.Items {
			if list.Items[i].DeletionTimestamp == nil && list.Items[i].UID != claim.UID {
				live++
				consumers[list.Items[i].Spec.ConsumerRef] = true
			}
		}
		if live < maxPerSource {
			return
		}
		for k := range consumers {
			if k.Kind != "" && k.Name != "" {
				q.Add(k)
			}
		}
	}
	return handler.TypedFuncs[client.Object, quotav1alpha1.ConsumerRef]{
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[quotav1alpha1.ConsumerRef]) {
			if e.ObjectNew.GetDeletionTimestamp() != nil && e.ObjectOld.GetDeletionTimestamp() == nil {
				enqueue(ctx, e.ObjectNew, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[quotav1alpha1.ConsumerRef]) {
			enqueue(ctx, e.Object, q)
		},
	}
}
