package status

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/apitest"
)

func TestWorst(t *testing.T) {
	tests := map[string]struct {
		blockers  []Blocker
		want      Blocker
		wantCount int
		wantOK    bool
	}{
		"no blockers means nothing blocks": {},
		"quota exceeded beats everything": {
			blockers: []Blocker{
				{Object: "a", Reason: computev1alpha.ReasonConfigurationError},
				{Object: "b", Reason: computev1alpha.ReasonQuotaExceeded, Message: "at limit"},
				{Object: "c", Reason: computev1alpha.ReasonImageUnavailable},
			},
			want: Blocker{Object: "b", Reason: computev1alpha.ReasonQuotaExceeded, Message: "at limit"}, wantCount: 1, wantOK: true,
		},
		"provisioning loses to everything": {
			blockers: []Blocker{
				{Object: "a", Reason: computev1alpha.ReasonProvisioning},
				{Object: "b", Reason: computev1alpha.ReasonTerminating},
			},
			want: Blocker{Object: "b", Reason: computev1alpha.ReasonTerminating}, wantCount: 1, wantOK: true,
		},
		"a failure the user must fix beats waiting for quota": {
			blockers: []Blocker{
				{Object: "a", Reason: computev1alpha.ReasonPendingQuota},
				{Object: "b", Reason: computev1alpha.ReasonInstanceCrashing},
			},
			want: Blocker{Object: "b", Reason: computev1alpha.ReasonInstanceCrashing}, wantCount: 1, wantOK: true,
		},
		"ties go to the first object by name and are counted": {
			blockers: []Blocker{
				{Object: "web-2", Reason: computev1alpha.ReasonImageUnavailable, Message: "x"},
				{Object: "web-0", Reason: computev1alpha.ReasonImageUnavailable, Message: "y"},
				{Object: "web-1", Reason: computev1alpha.ReasonProvisioning},
			},
			want: Blocker{Object: "web-0", Reason: computev1alpha.ReasonImageUnavailable, Message: "y"}, wantCount: 2, wantOK: true,
		},
		"an unknown reason ranks with NotAvailable, above provisioning": {
			blockers: []Blocker{
				{Object: "a", Reason: computev1alpha.ReasonProvisioning},
				{Object: "b", Reason: "SomethingNew"},
			},
			want: Blocker{Object: "b", Reason: "SomethingNew"}, wantCount: 1, wantOK: true,
		},
		"an unknown reason ranks below waiting for the network": {
			blockers: []Blocker{
				{Object: "a", Reason: computev1alpha.ReasonPendingNetwork},
				{Object: "b", Reason: "SomethingNew"},
			},
			want: Blocker{Object: "a", Reason: computev1alpha.ReasonPendingNetwork}, wantCount: 1, wantOK: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, n, ok := Worst(tc.blockers)
			if diff := cmp.Diff(tc.want, got); diff != "" || n != tc.wantCount || ok != tc.wantOK {
				t.Errorf("Worst = (%+v, %d, %t), want (%+v, %d, %t)", got, n, ok, tc.want, tc.wantCount, tc.wantOK)
			}
		})
	}
}

func TestPriorityTableIsOrdered(t *testing.T) {
	// What the table's documentation promises, stated independently of
	// the table: each reason is worse than the next.
	promised := []string{
		computev1alpha.ReasonDeploymentConflict,      // another Workload holds the name: the user must act
		computev1alpha.ReasonLocationNotBound,        // the city is not bound to the project
		computev1alpha.ReasonCellUnreachable,         // nothing reported about the city can be trusted
		computev1alpha.ReasonQuotaExceeded,           // a hard quota denial
		computev1alpha.ReasonQuotaNoBudget,           // no budget for a resource type
		computev1alpha.ReasonQuotaBackendUnavailable, // an operator must fix the backend
		computev1alpha.ReasonLocationNotReady,        // an operator must fix the Location
		computev1alpha.ReasonSourceNotFound,          // the project lacks an object the template reads
		computev1alpha.ReasonConfigurationError,      // the user must change the instance
		computev1alpha.ReasonInstanceCrashing,
		computev1alpha.ReasonPendingQuota, // waiting on gates
		computev1alpha.ReasonPendingNetwork,
		computev1alpha.ReasonAwaitingPropagation, // the referenced data is on its way to the cell
		computev1alpha.ReasonNotAvailable,        // generic, and where unknown reasons rank
		computev1alpha.ReasonTerminating,
		computev1alpha.ReasonProvisioning,      // the provider is working
		computev1alpha.ReasonDeploymentPending, // the cell has not reported yet
		computev1alpha.ReasonNoReplicasDesired, // scaled to zero: nothing to wait for
	}
	for i := 1; i < len(promised); i++ {
		if Severity(promised[i-1]) <= Severity(promised[i]) {
			t.Errorf("%s does not rank above %s", promised[i-1], promised[i])
		}
	}
	if got := Severity("SomethingNew"); got != Severity(computev1alpha.ReasonNotAvailable) {
		t.Errorf("an unknown reason ranks %d, want NotAvailable's %d", got, Severity(computev1alpha.ReasonNotAvailable))
	}
}

func TestReferencedDataFailuresAreFailuresAndItsWaitsAreNot(t *testing.T) {
	for _, r := range []string{computev1alpha.ReasonSourceNotFound, computev1alpha.ReasonSourceUnauthorized, computev1alpha.ReasonSourceTooLarge} {
		if !Failing(r) {
			t.Errorf("%s is not Failing: a person must create, share or shrink the object", r)
		}
	}
	for _, r := range []string{computev1alpha.ReasonResolving, computev1alpha.ReasonAwaitingPropagation} {
		if Failing(r) {
			t.Errorf("%s is Failing: it is a wait", r)
		}
	}
}

func TestEveryReasonHasExactlyOneRow(t *testing.T) {
	declared, err := apitest.AllReasons()
	if err != nil {
		t.Fatal(err)
	}
	if len(declared) < 10 {
		t.Fatalf("read only %d reasons from the API: %v", len(declared), declared)
	}
	count := map[string]int{}
	for _, r := range Registry() {
		count[r.Reason]++
		if !slices.Contains(declared, r.Reason) {
			t.Errorf("the registry has a row for %s, which the API does not declare", r.Reason)
		}
	}
	for _, r := range declared {
		switch count[r] {
		case 0:
			t.Errorf("reason %s declared by the API has no row in the registry: add one (rank, failing, terminal, halts, words, hint)", r)
		case 1:
		default:
			t.Errorf("reason %s has %d rows in the registry", r, count[r])
		}
	}
}

func TestRegistryColumnsAgree(t *testing.T) {
	for _, r := range Registry() {
		if r.Terminal && !r.Failing {
			t.Errorf("%s is terminal but not failing: a wait would end on what raises no warning", r.Reason)
		}
		if r.HaltsRollout && !r.Terminal {
			t.Errorf("%s halts a rollout but a wait keeps waiting on it", r.Reason)
		}
		if r.Phase != "" && r.Phase != PhaseAvailable && r.Phase != PhaseStarting && r.Phase != PhaseTerminating && r.Detail == "" && r.Words == "" {
			t.Errorf("%s is an Instance reason with no words", r.Reason)
		}
	}
	// The verdicts that used to live apart, now one table: a rollout halts
	// on what the provider says the user must change.
	var halting []string
	for _, r := range Registry() {
		if r.HaltsRollout {
			halting = append(halting, r.Reason)
		}
	}
	want := []string{computev1alpha.ReasonConfigurationError, computev1alpha.ReasonImageUnavailable, computev1alpha.ReasonInstanceCrashing}
	if !slices.Equal(halting, want) {
		t.Errorf("halting reasons %v, want %v", halting, want)
	}
}

func TestEveryTerminalReasonHasANextStep(t *testing.T) {
	for _, r := range Registry() {
		if !r.Terminal {
			continue
		}
		if steps := NextSteps(r.Reason, Hints{Workload: "web", CanUndo: true}); len(steps) == 0 {
			t.Errorf("%s has no next step", r.Reason)
		}
	}
	steps := strings.Join(NextSteps(computev1alpha.ReasonImageUnavailable, Hints{Workload: "web", CanUndo: true}), "\n")
	if !strings.Contains(steps, "datumctl compute rollout undo web") {
		t.Errorf("a failed image offers the rollback:\n%s", steps)
	}
}

func TestCompareProgress(t *testing.T) {
	bs := []Blocker{
		{Object: "SIN", Reason: computev1alpha.ReasonReplicasNotReady},
		{Object: "LHR", Reason: computev1alpha.ReasonScalingUp},
		{Object: "DFW", Reason: computev1alpha.ReasonRollingUpdate},
		{Object: "NRT", Reason: "SomethingNew"},
		{Object: "AMS", Reason: computev1alpha.ReasonDeploymentPending},
	}
	slices.SortFunc(bs, CompareProgress)
	var got []string
	for _, b := range bs {
		got = append(got, b.Object)
	}
	if want := []string{"AMS", "DFW", "LHR", "NRT", "SIN"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestCompareIsAStrictOrder(t *testing.T) {
	var bs []Blocker
	for _, r := range append(BlockingReasons(), "Unknown") {
		for _, o := range []string{"a", "b"} {
			bs = append(bs, Blocker{Object: o, Reason: r, Message: "m"})
		}
	}
	for _, a := range bs {
		if Compare(a, a) != 0 {
			t.Fatalf("%+v does not compare equal to itself", a)
		}
		for _, b := range bs {
			if a != b && (Compare(a, b) == 0 || Compare(a, b) != -Compare(b, a)) {
				t.Fatalf("Compare(%+v, %+v) = %d and reversed %d", a, b, Compare(a, b), Compare(b, a))
			}
		}
	}
	sorted := slices.Clone(bs)
	slices.SortFunc(sorted, Compare)
	if sorted[0].Reason != computev1alpha.ReasonDeploymentConflict {
		t.Errorf("sorting puts %s first", sorted[0].Reason)
	}
}

func TestFailing(t *testing.T) {
	for reason, want := range map[string]bool{
		computev1alpha.ReasonQuotaExceeded:      true,
		computev1alpha.ReasonImageUnavailable:   true,
		computev1alpha.ReasonInstanceCrashing:   true,
		computev1alpha.ReasonConfigurationError: true,
		computev1alpha.ReasonPendingQuota:       false,
		computev1alpha.ReasonProvisioning:       false,
		computev1alpha.ReasonTerminating:        false,
		"SomethingNew":                          false,
	} {
		if got := Failing(reason); got != want {
			t.Errorf("Failing(%s) = %t, want %t", reason, got, want)
		}
	}
}

func TestSetCondition(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(earlier.Add(time.Hour))
	base := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Provisioning", Message: "m", ObservedGeneration: 1, LastTransitionTime: earlier}
	tests := map[string]struct {
		set         metav1.Condition
		wantChanged bool
		wantLTT     metav1.Time
	}{
		"the same condition changes nothing": {
			set: base, wantChanged: false, wantLTT: earlier,
		},
		"a new reason keeps the transition time while the status holds": {
			set: func() metav1.Condition { c := base; c.Reason = "ImageUnavailable"; return c }(), wantChanged: true, wantLTT: earlier,
		},
		"a new status moves the transition time": {
			set: func() metav1.Condition { c := base; c.Status = metav1.ConditionTrue; return c }(), wantChanged: true, wantLTT: now,
		},
		"a new generation is a change": {
			set: func() metav1.Condition { c := base; c.ObservedGeneration = 2; return c }(), wantChanged: true, wantLTT: earlier,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			conds := []metav1.Condition{base}
			changed := SetCondition(&conds, tc.set, now)
			if changed != tc.wantChanged || !conds[0].LastTransitionTime.Equal(&tc.wantLTT) {
				t.Errorf("changed=%t ltt=%s, want %t %s", changed, conds[0].LastTransitionTime, tc.wantChanged, tc.wantLTT)
			}
		})
	}
	t.Run("a condition of a new type is added at now", func(t *testing.T) {
		var conds []metav1.Condition
		if !SetCondition(&conds, base, now) || len(conds) != 1 || !conds[0].LastTransitionTime.Equal(&now) {
			t.Errorf("got %+v", conds)
		}
	})
}

func TestTruncate(t *testing.T) {
	if got := Truncate("short"); got != "short" {
		t.Errorf("Truncate changed a short message: %q", got)
	}
	long := strings.Repeat("é", MaxMessageLength)
	got := Truncate(long)
	if len(got) > MaxMessageLength || !strings.HasSuffix(got, "...") || !strings.HasPrefix(long, strings.TrimSuffix(got, "...")) {
		t.Errorf("Truncate gave %d bytes ending %q", len(got), got[len(got)-5:])
	}
}

var update = flag.Bool("update", false, "rewrite the reason table in docs/api.md")

// The reason table in docs/api.md is the registry, rendered: it cannot
// drift (go test ./internal/status -update rewrites it).
func TestTheDocumentedReasonTableIsTheRegistry(t *testing.T) {
	const begin, end = "<!-- reasons:begin (go test ./internal/status -update) -->\n", "<!-- reasons:end -->"
	path := filepath.Join("..", "..", "docs", "api.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no reason table between %q and %q", path, begin, end)
	}
	var b strings.Builder
	b.WriteString("| reason | rank | failing | terminal | halts a rollout | an Instance shows | a city shows | next step |\n|---|---|---|---|---|---|---|---|\n")
	yes := func(v bool) string {
		if v {
			return "yes"
		}
		return ""
	}
	for _, r := range Registry() {
		rank := ""
		if r.Blocking {
			rank = strconv.Itoa(Severity(r.Reason))
		}
		inst := ""
		if r.Phase != "" {
			inst = r.Phase
			if r.Detail != "" {
				inst += " (" + r.Detail + ")"
			}
		}
		words := r.Words
		if words == "" {
			words = r.Detail
		}
		hint := strings.Join(NextSteps(r.Reason, Hints{Workload: "NAME", City: "CITY", CanUndo: true}), " ")
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %s |\n", r.Reason, rank, yes(r.Failing), yes(r.Terminal),
			yes(r.HaltsRollout), inst, words, strings.ReplaceAll(hint, "|", "\\|"))
	}
	got := text[:i+len(begin)] + b.String() + text[j:]
	if got == text {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the reason table in %s is stale: run go test ./internal/status -update", path)
}
