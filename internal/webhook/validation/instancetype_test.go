package validation

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
)

const (
	active     = computev1alpha.InstanceTypePhaseActive
	deprecated = computev1alpha.InstanceTypePhaseDeprecated
	disabled   = computev1alpha.InstanceTypePhaseDisabled
)

var itNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// itEnv is a catalog of d1 (Active), d2 (Active) and old (Deprecated to d2)
// with a seven-day grace period.
func itEnv(extra ...*computev1alpha.InstanceType) InstanceTypeEnvironment {
	types := catalog.Catalog{
		*makeInstanceType("d1", "1", "2Gi").build(),
		*makeInstanceType("d2", "2", "4Gi").build(),
		*makeInstanceType("old", "1", "1Gi").withPhase(deprecated, "d2").build(),
	}
	for _, e := range extra {
		types = append(types, *e)
	}
	return InstanceTypeEnvironment{Types: types, GracePeriod: 7 * 24 * time.Hour, Now: itNow}
}

// fields returns the paths and types of errs, which is what the rules
// promise.
func fields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

func TestValidateInstanceTypeCreate(t *testing.T) {
	tests := map[string]struct {
		it   *computev1alpha.InstanceType
		want []string
	}{
		"an Active sized type is accepted":                {it: makeInstanceType("d3", "4", "8Gi").build()},
		"an Active type may name an Active replacement":   {it: makeInstanceType("d3", "4", "8Gi").withPhase(active, "d2").build()},
		"a type created Deprecated is refused":            {it: makeInstanceType("d3", "4", "8Gi").withPhase(deprecated, "d2").build(), want: []string{"FieldValueInvalid spec.lifecycle.phase"}},
		"zero cpu and memory are refused":                 {it: makeInstanceType("d3", "0", "0").build(), want: []string{"FieldValueInvalid spec.resources.cpu", "FieldValueInvalid spec.resources.memory"}},
		"a missing replacement is refused":                {it: makeInstanceType("d3", "4", "8Gi").withPhase(active, "nope").build(), want: []string{"FieldValueInvalid spec.lifecycle.replacementInstanceType"}},
		"a Deprecated replacement is refused":             {it: makeInstanceType("d3", "4", "8Gi").withPhase(active, "old").build(), want: []string{"FieldValueInvalid spec.lifecycle.replacementInstanceType"}},
		"a type cannot replace itself":                    {it: makeInstanceType("d3", "4", "8Gi").withPhase(active, "d3").build(), want: []string{"FieldValueInvalid spec.lifecycle.replacementInstanceType"}},
		"a Disabled new type without replacement is both": {it: makeInstanceType("d3", "4", "8Gi").withPhase(disabled, "").build(), want: []string{"FieldValueInvalid spec.lifecycle.phase", "FieldValueRequired spec.lifecycle.replacementInstanceType"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, fields(ValidateInstanceTypeCreate(tc.it, itEnv()))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateInstanceTypeUpdate(t *testing.T) {
	d1 := makeInstanceType("d1", "1", "2Gi")
	oldDeprecated := func(ago time.Duration) *computev1alpha.InstanceType {
		return makeInstanceType("old", "1", "1Gi").withPhase(deprecated, "d2").deprecatedAt(itNow.Add(-ago)).build()
	}
	tests := map[string]struct {
		old, it *computev1alpha.InstanceType
		env     InstanceTypeEnvironment
		want    []string
	}{
		"an unchanged spec is accepted": {old: d1.build(), it: d1.build()},
		"cpu is immutable": {old: d1.build(), it: makeInstanceType("d1", "2", "2Gi").build(),
			want: []string{"FieldValueForbidden spec.resources.cpu"}},
		"memory is immutable, whatever the spelling": {old: d1.build(), it: makeInstanceType("d1", "1000m", "4Gi").build(),
			want: []string{"FieldValueForbidden spec.resources.memory"}},
		"the same quantity spelled otherwise is no change":            {old: d1.build(), it: makeInstanceType("d1", "1000m", "2048Mi").withPhase(active, "d2").build()},
		"Active to Deprecated with an Active replacement is accepted": {old: d1.build(), it: makeInstanceType("d1", "1", "2Gi").withPhase(deprecated, "d2").build()},
		"Deprecated needs a replacement": {old: d1.build(), it: makeInstanceType("d1", "1", "2Gi").withPhase(deprecated, "").build(),
			want: []string{"FieldValueRequired spec.lifecycle.replacementInstanceType"}},
		"Deprecated needs an existing replacement": {old: d1.build(), it: makeInstanceType("d1", "1", "2Gi").withPhase(deprecated, "nope").build(),
			want: []string{"FieldValueInvalid spec.lifecycle.replacementInstanceType"}},
		"Active to Disabled skips a phase": {old: d1.build(), it: makeInstanceType("d1", "1", "2Gi").withPhase(disabled, "d2").build(),
			want: []string{"FieldValueForbidden spec.lifecycle.phase"}},
		"phases never go back": {old: oldDeprecated(0), it: makeInstanceType("old", "1", "1Gi").withPhase(active, "d2").build(),
			want: []string{"FieldValueForbidden spec.lifecycle.phase"}},
		"Disabled before the grace period is refused": {old: oldDeprecated(24 * time.Hour), it: makeInstanceType("old", "1", "1Gi").withPhase(disabled, "d2").build(),
			want: []string{"FieldValueForbidden spec.lifecycle.phase"}},
		"Disabled without a recorded deprecation is refused": {old: makeInstanceType("old", "1", "1Gi").withPhase(deprecated, "d2").build(),
			it: makeInstanceType("old", "1", "1Gi").withPhase(disabled, "d2").build(), want: []string{"FieldValueForbidden spec.lifecycle.phase"}},
		"Disabled after the grace period is accepted": {old: oldDeprecated(8 * 24 * time.Hour), it: makeInstanceType("old", "1", "1Gi").withPhase(disabled, "d2").build()},
		"Disabled is accepted at once when the grace period is off": {old: oldDeprecated(0), it: makeInstanceType("old", "1", "1Gi").withPhase(disabled, "d2").build(),
			env: InstanceTypeEnvironment{Types: itEnv().Types}},
		"a replacement cannot leave Active": {old: makeInstanceType("d2", "2", "4Gi").build(), it: makeInstanceType("d2", "2", "4Gi").withPhase(deprecated, "d1").build(),
			want: []string{"FieldValueForbidden spec.lifecycle.phase"}},
		"a replacement of a Disabled type only may leave Active": {old: makeInstanceType("d2", "2", "4Gi").build(), it: makeInstanceType("d2", "2", "4Gi").withPhase(deprecated, "d1").build(),
			env: InstanceTypeEnvironment{Types: catalog.Catalog{*makeInstanceType("old", "1", "1Gi").withPhase(disabled, "d2").build(), *d1.build()}}},
		"a stored replacement that has since retired is not re-checked": {old: oldDeprecated(0), it: func() *computev1alpha.InstanceType {
			it := oldDeprecated(0)
			it.Spec.DisplayName = "Old"
			return it
		}(), env: InstanceTypeEnvironment{Types: catalog.Catalog{*makeInstanceType("d2", "2", "4Gi").withPhase(deprecated, "d1").build()}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			env := tc.env
			if env.Types == nil {
				env = itEnv()
			}
			if env.Now.IsZero() {
				env.Now = itNow
			}
			if diff := cmp.Diff(tc.want, fields(ValidateInstanceTypeUpdate(tc.it, tc.old, env))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateInstanceTypeDelete(t *testing.T) {
	tests := map[string]struct {
		name string
		want []string
	}{
		"a type nothing names may be deleted":              {name: "d1"},
		"a live type's replacement may not be deleted":     {name: "d2", want: []string{"FieldValueForbidden metadata.name"}},
		"a type only a Disabled type names may be deleted": {name: "d9"},
	}
	env := itEnv(makeInstanceType("gone", "1", "1Gi").withPhase(disabled, "d9").build(), makeInstanceType("d9", "1", "1Gi").build())
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			it := env.Types.Find(tc.name)
			if diff := cmp.Diff(tc.want, fields(ValidateInstanceTypeDelete(it, env))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateInstanceTypeSelection(t *testing.T) {
	off := makeInstanceType("datumcloud-d1-standard-8", "4", "8Gi").withPhase(disabled, "datumcloud-d1-standard-4").build()
	dep := makeInstanceType("datumcloud-d1-standard-16", "8", "16Gi").withPhase(deprecated, "datumcloud-d1-standard-4").build()
	env := bound("DFW", "LHR")
	env.InstanceTypes = append(env.InstanceTypes, *off, *dep)
	typed := func(name string) *computev1alpha.Workload {
		return makeWorkload().with(func(w *computev1alpha.Workload) { w.Spec.Template.Spec.Runtime.Resources.InstanceType = name }).build()
	}
	p := "spec.template.spec.runtime.resources.instanceType"
	tests := map[string]struct {
		w, old       *computev1alpha.Workload
		env          *Environment
		want         []string
		wantWarnings int
	}{
		"an Active type is accepted":                       {w: typed("datumcloud-d1-standard-4")},
		"the retired spelling is accepted with a warning":  {w: typed("datumcloud/d1-standard-2"), wantWarnings: 1},
		"a Deprecated type is accepted with a warning":     {w: typed("datumcloud-d1-standard-16"), wantWarnings: 1},
		"an unknown type is refused":                       {w: typed("acme-huge"), want: []string{"FieldValueNotSupported " + p}},
		"a new Workload on a Disabled type is refused":     {w: typed("datumcloud-d1-standard-8"), want: []string{"FieldValueForbidden " + p}},
		"a Workload keeping its Disabled type is accepted": {w: typed("datumcloud-d1-standard-8"), old: typed("datumcloud-d1-standard-8")},
		"a Workload keeping a type the catalog lacks is accepted with a warning": {
			w: typed("acme-huge"), old: typed("acme-huge"), wantWarnings: 1},
		"a Workload keeping its type on a plane without a catalog is accepted with a warning": {
			w: typed("datumcloud-d1-standard-4"), old: typed("datumcloud-d1-standard-4"), env: &Environment{Cities: env.Cities}, wantWarnings: 1},
		"moving to a type the catalog lacks is refused": {
			w: typed("acme-huge"), old: typed("datumcloud-d1-standard-4"), want: []string{"FieldValueNotSupported " + p}},
		"moving to a Disabled type is refused": {w: typed("datumcloud-d1-standard-8"), old: typed("datumcloud-d1-standard-4"), want: []string{"FieldValueForbidden " + p}},
		"an empty catalog refuses every type":  {w: typed("datumcloud-d1-standard-4"), env: &Environment{Cities: env.Cities}, want: []string{"FieldValueInvalid " + p}},
		"offline validation skips the catalog": {w: typed("acme-huge"), env: &Environment{Cities: env.Cities, SkipInstanceTypes: true}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := env
			if tc.env != nil {
				e = *tc.env
			}
			errs := ValidateWorkloadCreate(tc.w, e)
			if tc.old != nil {
				errs = ValidateWorkloadUpdate(tc.w, tc.old, e)
			}
			if diff := cmp.Diff(tc.want, fields(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if got := InstanceTypeWarnings(tc.w, tc.old, e); len(got) != tc.wantWarnings {
				t.Errorf("warnings = %q, want %d", got, tc.wantWarnings)
			}
		})
	}
	t.Run("the refusal names the type and its replacement", func(t *testing.T) {
		errs := ValidateWorkloadCreate(typed("datumcloud-d1-standard-8"), env)
		want := "InstanceType 'datumcloud-d1-standard-8' is disabled; please update your workload to 'datumcloud-d1-standard-4'."
		if len(errs) != 1 || errs[0].Detail != want {
			t.Fatalf("errors = %v, want one with %q", errs, want)
		}
	})
}

// FuzzValidateInstanceType checks that InstanceType validation never
// panics, keeps its errors on the InstanceType's fields, accepts an
// unchanged spec and is deterministic.
func FuzzValidateInstanceType(f *testing.F) {
	f.Add("d3", "1", "2Gi", "Active", "", "1", "2Gi", "Active", "", int64(0))
	f.Add("old", "1", "1Gi", "Deprecated", "d2", "1", "1Gi", "Disabled", "d2", int64(3600))
	f.Add("d2", "2", "4Gi", "Active", "", "3", "-1", "Gone", "d2", int64(-5))
	f.Fuzz(func(t *testing.T, name, cpu, mem, phase, rep, newCPU, newMem, newPhase, newRep string, agoSeconds int64) {
		build := func(cpu, mem, phase, rep string) *computev1alpha.InstanceType {
			it := makeInstanceType(name, "1", "1").withPhase(computev1alpha.InstanceTypeLifecyclePhase(phase), rep).build()
			if q, err := resource.ParseQuantity(cpu); err == nil {
				it.Spec.Resources.CPU = q
			}
			if q, err := resource.ParseQuantity(mem); err == nil {
				it.Spec.Resources.Memory = q
			}
			return it
		}
		old, it := build(cpu, mem, phase, rep), build(newCPU, newMem, newPhase, newRep)
		old.Status.DeprecatedAt = nil
		if agoSeconds != 0 {
			makeInstanceTypeAt(old, itNow.Add(-time.Duration(agoSeconds)*time.Second))
		}
		env := itEnv()
		for _, errs := range []field.ErrorList{
			ValidateInstanceTypeCreate(it, env), ValidateInstanceTypeUpdate(it, old, env), ValidateInstanceTypeDelete(it, env),
		} {
			for _, e := range errs {
				if e.Field != "metadata.name" && !hasPrefix(e.Field, "spec.") {
					t.Fatalf("error outside the InstanceType's fields: %v", e)
				}
			}
		}
		if errs := ValidateInstanceTypeUpdate(old.DeepCopy(), old, env); len(errs) != 0 {
			t.Fatalf("an update that changes nothing is rejected: %v", errs)
		}
		a, _ := json.Marshal(ValidateInstanceTypeUpdate(it, old, env))
		b, _ := json.Marshal(ValidateInstanceTypeUpdate(it, old, env))
		if string(a) != string(b) {
			t.Fatalf("validation is not deterministic:\n%s\n%s", a, b)
		}
	})
}

// makeInstanceTypeAt records it as deprecated at t.
func makeInstanceTypeAt(it *computev1alpha.InstanceType, at time.Time) {
	(&instanceTypeBuilder{it: it}).deprecatedAt(at)
}

// hasPrefix is strings.HasPrefix, kept local to the fuzz target.
func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }
