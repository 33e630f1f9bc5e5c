package quotaservice

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/quota"
)

func TestCellCityIsWhatTheNameEndsWith(t *testing.T) {
	for name, want := range map[string]string{
		"cell-dfw": "DFW", "dfw": "DFW", "a-b-lhr": "LHR", "cell-flow": "FLOW", "cell-": "", "": "",
	} {
		if got := CellCity(name); got != want {
			t.Errorf("CellCity(%q) = %q, want %q", name, got, want)
		}
	}
}

// cellClaim is a live claim of namespace ns made by cell (none when empty),
// created at second sec.
func cellClaim(ns, name, cell string, sec int) *quotav1alpha1.ResourceClaim {
	c := &quotav1alpha1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, UID: types.UID(ns + "/" + name),
		CreationTimestamp: metav1.NewTime(time.Unix(int64(1000+sec), 0)),
	}}
	if cell != "" {
		c.Labels = map[string]string{computev1alpha.SourceClusterLabel: cell}
	}
	return c
}

func TestRankSourcesCountsEachCellsLiveClaimsFirstComeFirstServed(t *testing.T) {
	deleting := cellClaim("web", "c-gone", "cell-dfw", 0)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(2000, 0)}
	claims := []*quotav1alpha1.ResourceClaim{
		cellClaim("web", "c-3", "cell-dfw", 3),
		cellClaim("api", "c-1", "cell-dfw", 1),
		cellClaim("web", "c-1", "cell-dfw", 1), // same second: namespace, then name
		cellClaim("web", "l-2", "cell-lhr", 2),
		cellClaim("web", "admin", "", 0),
		deleting,
	}
	rank, outstanding := rankSources(claims)
	want := map[types.UID]int{"api/c-1": 0, "web/c-1": 1, "web/c-3": 2, "web/l-2": 0}
	if len(rank) != len(want) {
		t.Errorf("ranked %v, want %v (claims being deleted and claims no cell made are not ranked)", rank, want)
	}
	for uid, r := range want {
		if rank[uid] != r {
			t.Errorf("rank of %s = %d, want %d", uid, rank[uid], r)
		}
	}
	if outstanding["cell-dfw"] != 3 || outstanding["cell-lhr"] != 1 {
		t.Errorf("outstanding %v, want cell-dfw 3 and cell-lhr 1", outstanding)
	}
}

func TestJudgeSource(t *testing.T) {
	facts := func(claims ...*quotav1alpha1.ResourceClaim) sourceFacts {
		f := sourceFacts{cities: map[string]locations.Cities{
			"web":  locations.ReadyCities("web", "DFW", "LHR"),
			"bare": {},
		}}
		f.rank, f.outstanding = rankSources(claims)
		return f
	}
	first, second, third := cellClaim("web", "a", "cell-dfw", 1), cellClaim("web", "b", "cell-dfw", 2), cellClaim("web", "c", "cell-dfw", 3)
	tests := map[string]struct {
		claim  *quotav1alpha1.ResourceClaim
		facts  sourceFacts
		reason string
		says   []string
	}{
		"a cell serving a bound city is not refused": {
			claim: first, facts: facts(first),
		},
		"a claim no cell made is not judged": {
			claim: cellClaim("bare", "x", "", 1), facts: facts(),
		},
		"a cell whose city the namespace does not bind is refused, saying what to do": {
			claim: cellClaim("web", "x", "cell-sin", 1), facts: facts(), reason: ReasonCellServesNoBoundCity,
			says: []string{
				"refused: cell cell-sin serves city SIN, and namespace web binds no Location of that city (bound: DFW, LHR)",
				"bind a Location of that city in namespace web", "ServiceAccount compute-cells/cell-sin",
			},
		},
		"a namespace that binds nothing refuses every cell": {
			claim: cellClaim("bare", "x", "cell-dfw", 1), facts: facts(), reason: ReasonCellServesNoBoundCity,
			says: []string{"namespace bare binds no Location of that city (bound: none)"},
		},
		"a cell whose name names no city is refused": {
			claim: cellClaim("web", "x", "cell-", 1), facts: facts(), reason: ReasonCellServesNoBoundCity,
			says: []string{"cell cell- names no city"},
		},
		"the claims within the cap are not refused": {
			claim: second, facts: facts(first, second, third),
		},
		"a claim beyond the cap is refused, saying the cap and its flag": {
			claim: third, facts: facts(first, second, third), reason: ReasonCellClaimCapReached,
			says: []string{"cell cell-dfw has 3 ResourceClaims outstanding in this quota plane and may have at most 2 (compute-quota --max-claims-per-source)",
				"2 of them came before this one", "evaluated again when the cell's older claims are released"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := judgeSource(tc.claim, tc.facts, 2)
			if got.reason != tc.reason {
				t.Fatalf("reason %q (%s), want %q", got.reason, got.message, tc.reason)
			}
			for _, s := range tc.says {
				if !strings.Contains(got.message, s) {
					t.Errorf("message %q does not say %q", got.message, s)
				}
			}
		})
	}
}

// A refused claim is answered ValidationFailed with the refusal's words and
// takes no capacity: the next claim in line is granted.
func TestARefusedClaimTakesNoCapacity(t *testing.T) {
	refused, legit := cellClaim("web", "a", "cell-sin", 1), cellClaim("web", "b", "cell-dfw", 2)
	for _, c := range []*quotav1alpha1.ResourceClaim{refused, legit} {
		ref := quota.ProjectRef("p")
		c.Spec.ConsumerRef = ref
		c.Spec.ResourceRef = quotav1alpha1.UnversionedObjectReference{APIGroup: ref.APIGroup, Kind: ref.Kind, Name: ref.Name}
		c.Spec.Requests = []quotav1alpha1.ResourceRequest{{ResourceType: computev1alpha.ResourceTypeInstances, Amount: 1}}
	}
	obs := &observation{
		claims: []*quotav1alpha1.ResourceClaim{refused, legit},
		byUID:  map[types.UID]*quotav1alpha1.ResourceClaim{refused.UID: refused, legit.UID: legit},
		limits: map[string]int64{computev1alpha.ResourceTypeInstances: 1},
	}
	obs.regs = indexRegistrations(ComputeRegistrations())
	l := newLedger()
	judge := func(c *quotav1alpha1.ResourceClaim) refusal {
		return judgeSource(c, sourceFacts{cities: map[string]locations.Cities{"web": locations.ReadyCities("web", "DFW")}}, 10)
	}
	claims, decisions := decideCandidates(l, obs, time.Unix(3000, 0), judge)
	if len(claims) != 2 || decisions[0].verdict != invalid || decisions[0].refusal != ReasonCellServesNoBoundCity || decisions[1].verdict != granted {
		t.Fatalf("decisions %+v, want the SIN cell's claim refused and DFW's granted", decisions)
	}
	s := claimStatus(refused, decisions[0], func(t string) string { return t }, metav1.NewTime(time.Unix(3000, 0)))
	if s.Conditions[0].Reason != quotav1alpha1.ResourceClaimReasonValidationFailed || !strings.Contains(s.Conditions[0].Message, "cell cell-sin serves city SIN") {
		t.Errorf("the refused claim's condition is %+v, want ValidationFailed saying why", s.Conditions[0])
	}
}
