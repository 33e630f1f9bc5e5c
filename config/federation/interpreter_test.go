// Package federation_test runs the Lua of the WorkloadDeployment
// ResourceInterpreterCustomization the way karmada-controller-manager does:
// objects go in as Lua tables decoded from JSON, results come back through
// JSON. (Karmada's own Lua VM package does not build against this module's
// Kubernetes libraries, so this harness stands in for it; test/e2e runs the
// same scripts in real Karmada.)
package federation_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1alpha1 "github.com/karmada-io/karmada/pkg/apis/config/v1alpha1"
	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"

	"github.com/citycells/compute/internal/referenceddata"
)

// customizations are the scripts of workloaddeployment-interpreter.yaml.
func customizations(t testing.TB) configv1alpha1.CustomizationRules {
	t.Helper()
	data, err := os.ReadFile("workloaddeployment-interpreter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ric := &configv1alpha1.ResourceInterpreterCustomization{}
	if err := yaml.UnmarshalStrict(data, ric); err != nil {
		t.Fatalf("the interpreter does not decode as a ResourceInterpreterCustomization: %v", err)
	}
	if ric.Spec.Target.APIVersion != "compute.datumapis.com/v1alpha" || ric.Spec.Target.Kind != "WorkloadDeployment" {
		t.Fatalf("the interpreter targets %s %s", ric.Spec.Target.APIVersion, ric.Spec.Target.Kind)
	}
	return ric.Spec.Customizations
}

// call runs fn of script with args (JSON-able values) and returns its
// results converted back to Go through JSON-like values.
func call(t testing.TB, script, fn string, nret int, args ...any) []any {
	t.Helper()
	ls := newState(t)
	defer ls.Close()
	jargs := make([]any, len(args))
	for i, a := range args {
		jargs[i] = jsonValue(t, a)
	}
	out, err := run(ls, script, fn, nret, jargs...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// newState is a Lua state with the libraries Karmada opens (its string and
// os are safe subsets).
func newState(t testing.TB) *lua.LState {
	t.Helper()
	ls := lua.NewState(lua.Options{SkipOpenLibs: true})
	for name, open := range map[string]lua.LGFunction{
		lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable,
		lua.StringLibName: lua.OpenString, lua.MathLibName: lua.OpenMath,
	} {
		if err := ls.CallByParam(lua.P{Fn: ls.NewFunction(open), Protect: true}, lua.LString(name)); err != nil {
			t.Fatal(err)
		}
	}
	return ls
}

// run does what Karmada's luavm.RunScript does on a state from its pool:
// loads (compiles) script, converts args (JSON values) into Lua, calls fn
// and converts its nret results back.
func run(ls *lua.LState, script, fn string, nret int, args ...any) ([]any, error) {
	ls.Pop(ls.GetTop())
	if err := ls.DoString(script); err != nil {
		return nil, fmt.Errorf("%s does not load: %w", fn, err)
	}
	largs := make([]lua.LValue, len(args))
	for i, a := range args {
		largs[i] = toLua(ls, a)
	}
	if err := ls.CallByParam(lua.P{Fn: ls.GetGlobal(fn), NRet: nret, Protect: true}, largs...); err != nil {
		return nil, fmt.Errorf("%s failed: %w", fn, err)
	}
	out := make([]any, nret)
	for i := range nret {
		out[i] = fromLua(ls.Get(i + 1))
	}
	ls.Pop(ls.GetTop())
	return out, nil
}

// jsonValue turns v into what decoding its JSON gives: maps, slices,
// float64, strings, bools and nils.
func jsonValue(t testing.TB, v any) any {
	t.Helper()
	if s, ok := v.(string); ok {
		v = json.RawMessage(s)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// toLua converts a JSON value into Lua as Karmada's VM does.
func toLua(ls *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case map[string]any:
		tbl := ls.CreateTable(0, len(x))
		for k, e := range x {
			tbl.RawSetString(k, toLua(ls, e))
		}
		return tbl
	case []any:
		tbl := ls.CreateTable(len(x), 0)
		for _, e := range x {
			tbl.Append(toLua(ls, e))
		}
		return tbl
	case float64:
		return lua.LNumber(x)
	case string:
		return lua.LString(x)
	case bool:
		return lua.LBool(x)
	case nil:
		return lua.LNil
	default:
		panic(fmt.Sprintf("unexpected %T", v))
	}
}

// fromLua converts a Lua value back; a table with array items is a slice.
func fromLua(v lua.LValue) any {
	switch x := v.(type) {
	case *lua.LTable:
		if n := x.MaxN(); n > 0 {
			out := make([]any, 0, n)
			for i := 1; i <= n; i++ {
				out = append(out, fromLua(x.RawGetInt(i)))
			}
			return out
		}
		out := map[string]any{}
		x.ForEach(func(k, e lua.LValue) { out[k.String()] = fromLua(e) })
		return out
	case lua.LNumber:
		return float64(x)
	case lua.LString:
		return string(x)
	case lua.LBool:
		return bool(x)
	default:
		return nil
	}
}

// spec is a WorkloadDeployment spec with replicas (nil: unset).
func spec(replicas any, image string) map[string]any {
	s := map[string]any{
		"cityCode":      "LHR",
		"placementName": "default",
		"workloadRef":   map[string]any{"name": "web", "uid": "u1"},
		"scaleSettings": map[string]any{"minReplicas": 2, "instanceManagementPolicy": "OrderedReady"},
		"template": map[string]any{"spec": map[string]any{"runtime": map[string]any{
			"sandbox": map[string]any{"containers": []any{map[string]any{"name": "app", "image": image}}},
		}}},
	}
	if replicas != nil {
		s["replicas"] = replicas
	}
	return s
}

// wd is a WorkloadDeployment; status may be nil.
func wd(generation int, templateGeneration int, sp map[string]any, status map[string]any) map[string]any {
	obj := map[string]any{
		"apiVersion": "compute.datumapis.com/v1alpha",
		"kind":       "WorkloadDeployment",
		"metadata": map[string]any{
			"name": "web", "namespace": "ns", "generation": generation,
			"annotations": map[string]any{"resourcetemplate.karmada.io/generation": fmt.Sprint(templateGeneration)},
		},
		"spec": sp,
	}
	if status != nil {
		obj["status"] = status
	}
	return obj
}

// cond is a condition.
func cond(condType, status, reason string) map[string]any {
	return map[string]any{"type": condType, "status": status, "reason": reason, "message": reason + " message",
		"lastTransitionTime": "2026-01-01T00:00:00Z"}
}

// memberStatus is what a cell's controller writes.
func memberStatus(observed, ready, desired int, conds ...map[string]any) map[string]any {
	cs := make([]any, 0, len(conds))
	for _, c := range conds {
		cs = append(cs, c)
	}
	s := map[string]any{
		"observedGeneration": observed, "replicas": desired, "currentReplicas": ready, "updatedReplicas": desired,
		"readyReplicas": ready, "desiredReplicas": desired, "templateHash": "abc",
		"location": map[string]any{"name": "lhr", "namespace": "datum-locations"},
	}
	if len(cs) > 0 {
		s["conditions"] = cs
	}
	return s
}

// notReadyOf is what a cell reports of two Instances that cannot pull
// their image.
func notReadyOf() map[string]any {
	return map[string]any{"reason": "ImageUnavailable", "message": "pull failed", "count": 2,
		"instances": []any{"web-lhr-0", "web-lhr-1"}}
}

// withNotReady adds notReadyOf to a member status.
func withNotReady(s map[string]any) map[string]any {
	s["notReady"] = notReadyOf()
	return s
}

// suspendedStatus marks a member status suspended.
func suspendedStatus(s map[string]any) map[string]any {
	s["suspended"] = true
	return s
}

// member is one cluster's member object.
type member struct {
	cluster string
	obj     map[string]any
}

// items reflects each member's status with the interpreter's own
// statusReflection, as Karmada records them in the ResourceBinding.
func items(t testing.TB, rules configv1alpha1.CustomizationRules, members ...member) []any {
	t.Helper()
	out := make([]any, 0, len(members))
	for _, m := range members {
		if m.obj == nil {
			// A member whose latest Work is not applied: Karmada leaves its
			// status out.
			out = append(out, map[string]any{"clusterName": m.cluster, "applied": false, "health": "Unknown",
				"appliedMessage": "the object has been modified; please apply your changes to the latest version"})
			continue
		}
		status := call(t, rules.StatusReflection.LuaScript, "ReflectStatus", 1, m.obj)[0]
		out = append(out, map[string]any{"clusterName": m.cluster, "applied": true, "health": "Healthy", "status": status})
	}
	return out
}

func TestStatusAggregation(t *testing.T) {
	rules := customizations(t)
	hub := func(generation int, sp map[string]any, observed int) map[string]any {
		return wd(generation, 0, sp, map[string]any{"observedGeneration": observed})
	}
	cases := map[string]struct {
		hub     map[string]any
		members []member
		// want holds the status fields to check; absent keys must be absent.
		want map[string]any
	}{
		"one caught-up member reports its counts, conditions and location, and the hub generation": {
			hub: hub(3, spec(2, "v1"), 2),
			members: []member{{"cell-lhr", wd(1, 3, spec(2, "v1"), memberStatus(1, 2, 2,
				cond("Available", "True", "Available")))}},
			want: map[string]any{
				"observedGeneration": 3, "replicas": 2, "currentReplicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
				"desiredReplicas": 2, "templateHash": "abc",
				"location":   map[string]any{"name": "lhr", "namespace": "datum-locations"},
				"conditions": []any{withGen(cond("Available", "True", "Available"), 3)},
			},
		},
		"one member's notReady (the worst Instances of its current template) reaches the hub": {
			hub: hub(3, spec(2, "v1"), 2),
			members: []member{{"cell-lhr", wd(1, 3, spec(2, "v1"), withNotReady(memberStatus(1, 0, 2,
				cond("Available", "False", "ImageUnavailable"))))}},
			want: map[string]any{
				"observedGeneration": 3, "replicas": 2, "currentReplicas": 0, "updatedReplicas": 2, "readyReplicas": 0,
				"desiredReplicas": 2, "templateHash": "abc",
				"location":   map[string]any{"name": "lhr", "namespace": "datum-locations"},
				"conditions": []any{withGen(cond("Available", "False", "ImageUnavailable"), 3)},
				"notReady":   notReadyOf(),
			},
		},
		"a member with the new generation annotation but the old spec does not advance observedGeneration": {
			hub: hub(3, spec(3, "v1"), 2),
			members: []member{{"cell-lhr", wd(1, 3, spec(2, "v1"), memberStatus(1, 2, 2,
				cond("Available", "True", "Available")))}},
			want: map[string]any{
				"observedGeneration": 2, "replicas": 2, "currentReplicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
				"desiredReplicas": 2, "templateHash": "abc",
				"location":   map[string]any{"name": "lhr", "namespace": "datum-locations"},
				"conditions": []any{withGen(cond("Available", "True", "Available"), 2)},
			},
		},
		"a member with an older template image does not advance observedGeneration": {
			hub:     hub(4, spec(nil, "v2"), 3),
			members: []member{{"cell-lhr", wd(2, 4, spec(nil, "v1"), memberStatus(2, 2, 2))}},
			want: map[string]any{
				"observedGeneration": 3, "replicas": 2, "currentReplicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
				"desiredReplicas": 2, "templateHash": "abc", "location": map[string]any{"name": "lhr", "namespace": "datum-locations"},
			},
		},
		"a member that has not observed its own generation does not advance observedGeneration": {
			hub:     hub(2, spec(nil, "v2"), 1),
			members: []member{{"cell-lhr", wd(2, 2, spec(nil, "v2"), memberStatus(1, 1, 2))}},
			want: map[string]any{
				"observedGeneration": 1, "replicas": 2, "currentReplicas": 1, "updatedReplicas": 2, "readyReplicas": 1,
				"desiredReplicas": 2, "templateHash": "abc", "location": map[string]any{"name": "lhr", "namespace": "datum-locations"},
			},
		},
		"several members: counts add up, the worst Available wins naming its cluster, any Progressing wins": {
			hub: hub(5, spec(2, "v1"), 4),
			members: []member{
				{"cell-sin", wd(1, 5, spec(2, "v1"), memberStatus(1, 0, 2,
					cond("Available", "False", "PendingQuota"), cond("Progressing", "True", "Scaling")))},
				{"cell-dfw", wd(3, 5, spec(2, "v1"), memberStatus(3, 2, 2,
					cond("Available", "True", "Available"), cond("Progressing", "False", "Complete")))},
			},
			want: map[string]any{
				"observedGeneration": 5, "replicas": 4, "currentReplicas": 2, "updatedReplicas": 4, "readyReplicas": 2,
				"desiredReplicas": 4, "templateHash": "abc",
				"conditions": []any{
					withMessage(withGen(cond("Available", "False", "PendingQuota"), 5), "cell-sin: PendingQuota message"),
					withMessage(withGen(cond("Progressing", "True", "Scaling"), 5), "cell-sin: Scaling message"),
				},
			},
		},
		"a member that has not reported a condition type makes it Unknown": {
			hub: hub(1, spec(nil, "v1"), 0),
			members: []member{
				{"cell-dfw", wd(1, 1, spec(nil, "v1"), memberStatus(1, 2, 2, cond("Available", "True", "Available")))},
				{"cell-lhr", wd(1, 1, spec(nil, "v1"), nil)},
			},
			want: map[string]any{
				"replicas": 2, "currentReplicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "desiredReplicas": 2,
				"observedGeneration": 0, "templateHash": "abc",
				"conditions": []any{map[string]any{"type": "Available", "status": "Unknown", "reason": "NotReported",
					"message": "cell-lhr: Available has not been reported yet", "lastTransitionTime": "2026-01-01T00:00:00Z"}},
			},
		},
		"a member whose spec.replicas Karmada set from the hub's minReplicas is caught up": {
			hub:     hub(2, spec(nil, "v1"), 1),
			members: []member{{"cell-lhr", wd(1, 2, spec(2, "v1"), memberStatus(1, 2, 2))}},
			want: map[string]any{
				"observedGeneration": 2, "replicas": 2, "currentReplicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
				"desiredReplicas": 2, "templateHash": "abc", "location": map[string]any{"name": "lhr", "namespace": "datum-locations"},
			},
		},
		"members whose divided replicas add up to the hub's are caught up": {
			hub: hub(2, spec(5, "v1"), 1),
			members: []member{
				{"cell-dfw", wd(1, 2, spec(3, "v1"), memberStatus(1, 3, 3))},
				{"cell-lhr", wd(1, 2, spec(2, "v1"), memberStatus(1, 2, 2))},
			},
			want: map[string]any{
				"observedGeneration": 2, "replicas": 5, "currentReplicas": 5, "updatedReplicas": 5, "readyReplicas": 5,
				"desiredReplicas": 5, "templateHash": "abc",
			},
		},
		"suspended when every member is": {
			hub: hub(1, spec(nil, "v1"), 1),
			members: []member{
				{"cell-dfw", wd(1, 1, spec(nil, "v1"), suspendedStatus(memberStatus(1, 0, 2)))},
				{"cell-lhr", wd(1, 1, spec(nil, "v1"), suspendedStatus(memberStatus(1, 0, 2)))},
			},
			want: map[string]any{
				"observedGeneration": 1, "replicas": 4, "currentReplicas": 0, "updatedReplicas": 4, "readyReplicas": 0,
				"desiredReplicas": 4, "templateHash": "abc", "suspended": true,
			},
		},
		"not suspended while one member still runs": {
			hub: hub(1, spec(nil, "v1"), 1),
			members: []member{
				{"cell-dfw", wd(1, 1, spec(nil, "v1"), suspendedStatus(memberStatus(1, 0, 2)))},
				{"cell-lhr", wd(1, 1, spec(nil, "v1"), memberStatus(1, 2, 2))},
			},
			want: map[string]any{
				"observedGeneration": 1, "replicas": 4, "currentReplicas": 2, "updatedReplicas": 4, "readyReplicas": 2,
				"desiredReplicas": 4, "templateHash": "abc",
			},
		},
		"a member whose latest Work is not applied keeps what it last reported": {
			hub: wd(2, 0, spec(nil, "v1"), map[string]any{"observedGeneration": 2, "readyReplicas": 2, "desiredReplicas": 2,
				"templateHash": "abc", "conditions": []any{withGen(cond("Available", "True", "Available"), 2)}}),
			members: []member{{"cell-lhr", nil}},
			want: map[string]any{
				"observedGeneration": 2, "readyReplicas": 2, "desiredReplicas": 2, "templateHash": "abc",
				"conditions": []any{withGen(cond("Available", "True", "Available"), 2)},
			},
		},
		"a member not applied yet that never reported reports nothing": {
			hub:     hub(1, spec(nil, "v1"), 0),
			members: []member{{"cell-lhr", nil}},
			want: map[string]any{
				"observedGeneration": 0, "replicas": 0, "currentReplicas": 0, "updatedReplicas": 0, "readyReplicas": 0,
				"desiredReplicas": 0,
			},
		},
		"no members: counts drop to zero, observedGeneration and conditions stay": {
			hub: wd(2, 0, spec(nil, "v1"), map[string]any{"observedGeneration": 1, "readyReplicas": 3,
				"conditions": []any{cond("Available", "True", "Available")}}),
			want: map[string]any{
				"observedGeneration": 1, "replicas": 0, "currentReplicas": 0, "updatedReplicas": 0, "readyReplicas": 0,
				"desiredReplicas": 0, "conditions": []any{cond("Available", "True", "Available")},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := call(t, rules.StatusAggregation.LuaScript, "AggregateStatus", 1, tc.hub, items(t, rules, tc.members...))[0]
			status, _ := got.(map[string]any)["status"].(map[string]any)
			if diff := cmp.Diff(jsonValue(t, tc.want), jsonValue(t, status)); diff != "" {
				t.Errorf("aggregated status (-want +got):\n%s", diff)
			}
		})
	}
}

// withGen sets a condition's observedGeneration.
func withGen(c map[string]any, g int) map[string]any {
	out := map[string]any{"observedGeneration": g}
	for k, v := range c {
		out[k] = v
	}
	return out
}

// withMessage sets a condition's message.
func withMessage(c map[string]any, m string) map[string]any {
	c["message"] = m
	return c
}

func TestStatusReflection(t *testing.T) {
	rules := customizations(t)
	reflect := func(obj map[string]any) map[string]any {
		return call(t, rules.StatusReflection.LuaScript, "ReflectStatus", 1, obj)[0].(map[string]any)
	}
	got := reflect(wd(4, 7, spec(3, "v1"), memberStatus(4, 1, 3, cond("Available", "True", "Available"))))
	for k, want := range map[string]any{
		"generation": 4.0, "resourceTemplateGeneration": 7.0, "observedGeneration": 4.0, "readyReplicas": 1.0,
		"specReplicas": 3.0, "templateHash": "abc",
	} {
		if got[k] != want {
			t.Errorf("reflected %s = %v, want %v", k, got[k], want)
		}
	}
	if _, ok := got["conditions"].([]any); !ok {
		t.Errorf("conditions not reflected: %v", got["conditions"])
	}
	same := reflect(wd(9, 1, spec(1, "v1"), nil))["specDigest"]
	if got["specDigest"] == "" || got["specDigest"] != same {
		t.Errorf("the spec digest ignores replicas and metadata: %v vs %v", got["specDigest"], same)
	}
	if other := reflect(wd(4, 7, spec(3, "v2"), nil))["specDigest"]; other == got["specDigest"] {
		t.Errorf("a different image has the same digest %v", other)
	}
	if empty := reflect(map[string]any{"metadata": map[string]any{"name": "x"}}); len(empty) != 0 {
		t.Errorf("an object without status or spec reflects %v", empty)
	}
}

func TestReplicasAndHealth(t *testing.T) {
	rules := customizations(t)
	for name, tc := range map[string]struct {
		obj  map[string]any
		want float64
	}{
		"spec.replicas wins":                 {wd(1, 1, spec(4, "v1"), nil), 4},
		"minReplicas without spec.replicas":  {wd(1, 1, spec(nil, "v1"), nil), 2},
		"zero replicas are zero, not absent": {wd(1, 1, spec(0, "v1"), nil), 0},
	} {
		t.Run("replicas: "+name, func(t *testing.T) {
			out := call(t, rules.ReplicaResource.LuaScript, "GetReplicas", 2, tc.obj)
			if out[0] != tc.want || out[1] != nil {
				t.Errorf("GetReplicas = %v, %v; want %v, nil", out[0], out[1], tc.want)
			}
		})
	}
	t.Run("replica revision writes spec.replicas", func(t *testing.T) {
		out := call(t, rules.ReplicaRevision.LuaScript, "ReviseReplica", 1, wd(1, 1, spec(nil, "v1"), nil), 7)[0]
		if got := out.(map[string]any)["spec"].(map[string]any)["replicas"]; got != 7.0 {
			t.Errorf("spec.replicas = %v, want 7", got)
		}
	})
	for name, tc := range map[string]struct {
		obj  map[string]any
		want bool
	}{
		"no status is unhealthy":                    {wd(1, 1, spec(nil, "v1"), nil), false},
		"an unobserved generation is unhealthy":     {wd(2, 1, spec(nil, "v1"), memberStatus(1, 2, 2)), false},
		"Available=False with replicas wanted":      {wd(1, 1, spec(nil, "v1"), memberStatus(1, 0, 2, cond("Available", "False", "PendingQuota"))), false},
		"Available=False scaled to zero is fine":    {wd(1, 1, spec(0, "v1"), memberStatus(1, 0, 0, cond("Available", "False", "NoReplicas"))), true},
		"observed and available is healthy":         {wd(1, 1, spec(nil, "v1"), memberStatus(1, 2, 2, cond("Available", "True", "Available"))), true},
		"observed, progressing, not yet Available":  {wd(1, 1, spec(nil, "v1"), memberStatus(1, 0, 2)), true},
		"suspended is healthy though not Available": {wd(1, 1, spec(nil, "v1"), suspendedStatus(memberStatus(1, 0, 2, cond("Available", "False", "Suspended")))), true},
	} {
		t.Run("health: "+name, func(t *testing.T) {
			if got := call(t, rules.HealthInterpretation.LuaScript, "InterpretHealth", 1, tc.obj)[0]; got != tc.want {
				t.Errorf("InterpretHealth = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSpecDigestIsStable pins the spec digest. Members' digests live in
// ResourceBindings, reflected by whatever script ran then, and aggregation
// compares them with the hub's, computed by the current script: a change
// to the digest would hold every hub copy's observedGeneration back until
// each member's status changes again.
func TestSpecDigestIsStable(t *testing.T) {
	rules := customizations(t)
	for name, tc := range map[string]struct {
		spec map[string]any
		want string
	}{
		"a small spec":                    {spec(3, "v1"), "c4fd2d9546190d06"},
		"a spec of two containers, a NIC": {benchSpec(), "cc2fab7d1000d98a"},
	} {
		t.Run(name, func(t *testing.T) {
			got := call(t, rules.StatusReflection.LuaScript, "ReflectStatus", 1, wd(1, 1, tc.spec, nil))[0].(map[string]any)
			if got["specDigest"] != tc.want {
				t.Errorf("specDigest = %v, want %s", got["specDigest"], tc.want)
			}
		})
	}
}

func TestDependenciesAreTheExpectedCompanions(t *testing.T) {
	rules := customizations(t)
	if rules.DependencyInterpretation == nil {
		t.Fatal("the interpreter declares no dependencies: companions would never reach a cell")
	}
	withAnnotation := func(v string) map[string]any {
		obj := map[string]any{"metadata": map[string]any{"name": "web-dfw", "namespace": "ns-1"}}
		if v != "" {
			obj["metadata"].(map[string]any)["annotations"] = map[string]any{"compute.datumapis.com/expected-referenced-data": v}
		}
		return obj
	}
	for name, tc := range map[string]struct {
		annotation string
		want       []string
	}{
		"no annotation, no dependency": {"", nil},
		"an empty set, no dependency":  {`[]`, nil},
		"each token names its companion": {`["ConfigMap/app-config","Secret/db.creds"]`,
			[]string{"v1/ConfigMap ns-1/configmap.app-config", "v1/Secret ns-1/secret.db.creds"}},
		"a malformed token is skipped": {`["Pod/x","Secret/","ConfigMap/ok"]`, []string{"v1/ConfigMap ns-1/configmap.ok"}},
	} {
		t.Run(name, func(t *testing.T) {
			out := call(t, rules.DependencyInterpretation.LuaScript, "GetDependencies", 1, withAnnotation(tc.annotation))[0]
			var got []string
			if list, ok := out.([]any); ok {
				for _, d := range list {
					m := d.(map[string]any)
					got = append(got, fmt.Sprintf("%s/%s %s/%s", m["apiVersion"], m["kind"], m["namespace"], m["name"]))
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("GetDependencies = %v, want %v", got, tc.want)
			}
			for _, g := range got {
				// The Go side names companions the same way.
				kindName := strings.SplitN(strings.TrimPrefix(g, "v1/"), " ", 2)
				name := strings.TrimPrefix(kindName[1], "ns-1/")
				token := kindName[0] + "/" + strings.SplitN(name, ".", 2)[1]
				if referenceddata.CompanionNameOfToken(token) != name {
					t.Errorf("Lua names %s's companion %s, Go %s", token, name, referenceddata.CompanionNameOfToken(token))
				}
			}
		})
	}
}

// autoscalingSpec is spec with scaleSettings that autoscale between
// minReplicas 2 and maxReplicas 5 on cpu.
func autoscalingSpec(replicas any, image string) map[string]any {
	s := spec(replicas, image)
	s["scaleSettings"] = map[string]any{"minReplicas": 2, "maxReplicas": 5, "instanceManagementPolicy": "OrderedReady",
		"metrics": []any{map[string]any{"resource": map[string]any{"name": "cpu", "target": map[string]any{"averageUtilization": 50}}}}}
	return s
}

// autoscalingOf is what a cell's autoscaler reports.
func autoscalingOf() map[string]any {
	return map[string]any{"minReplicas": 2, "maxReplicas": 5, "desiredReplicas": 4, "currentReplicas": 4,
		"metrics": []any{map[string]any{"name": "cpu", "target": map[string]any{"averageUtilization": 50}, "currentAverageUtilization": 81}}}
}

// withAutoscaling adds autoscalingOf to a member status.
func withAutoscaling(s map[string]any) map[string]any {
	s["autoscaling"] = autoscalingOf()
	return s
}

func TestRetentionKeepsTheAutoscalersReplicas(t *testing.T) {
	rules := customizations(t)
	if rules.Retention == nil {
		t.Fatal("no retention: Karmada would write the hub's spec.replicas over every cell's autoscaler")
	}
	noMetrics := autoscalingSpec(2, "v2")
	noMetrics["scaleSettings"].(map[string]any)["metrics"] = []any{}
	for name, tc := range map[string]struct {
		desired, observed map[string]any
		want              any
	}{
		"autoscaling: the member's count is kept":                   {autoscalingSpec(2, "v2"), autoscalingSpec(4, "v1"), 4.0},
		"autoscaling, the member has no count yet: the hub's":       {autoscalingSpec(2, "v2"), autoscalingSpec(nil, "v1"), 2.0},
		"no autoscaling: the hub's":                                 {spec(2, "v2"), spec(4, "v1"), 2.0},
		"autoscaling removed: the hub's again":                      {spec(nil, "v2"), autoscalingSpec(4, "v1"), nil},
		"maxReplicas without metrics does not autoscale: the hub's": {noMetrics, autoscalingSpec(4, "v1"), 2.0},
	} {
		t.Run(name, func(t *testing.T) {
			out := call(t, rules.Retention.LuaScript, "Retain", 1, wd(3, 3, tc.desired, nil), wd(2, 2, tc.observed, nil))[0]
			got := out.(map[string]any)["spec"].(map[string]any)
			if got["replicas"] != tc.want {
				t.Errorf("spec.replicas = %v, want %v", got["replicas"], tc.want)
			}
			if image := got["template"].(map[string]any)["spec"].(map[string]any)["runtime"].(map[string]any)["sandbox"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]; image != "v2" {
				t.Errorf("the rest of the spec is not the hub's: image %v", image)
			}
		})
	}
}

func TestStatusAggregationOfAutoscaledMembers(t *testing.T) {
	rules := customizations(t)
	hub := wd(3, 0, autoscalingSpec(nil, "v1"), map[string]any{"observedGeneration": 2})
	aggregate := func(members ...member) map[string]any {
		got := call(t, rules.StatusAggregation.LuaScript, "AggregateStatus", 1, hub, items(t, rules, members...))[0]
		return got.(map[string]any)["status"].(map[string]any)
	}

	t.Run("a member at its autoscaler's count within the bounds is caught up, and its autoscaling reaches the hub", func(t *testing.T) {
		st := aggregate(member{"cell-lhr", wd(1, 3, autoscalingSpec(4, "v1"), withAutoscaling(memberStatus(1, 4, 4,
			cond("AutoscalingReady", "True", "AutoscalerReady"))))})
		if st["observedGeneration"] != 3.0 {
			t.Errorf("observedGeneration = %v, want 3", st["observedGeneration"])
		}
		if diff := cmp.Diff(jsonValue(t, autoscalingOf()), st["autoscaling"]); diff != "" {
			t.Errorf("autoscaling (-member +hub):\n%s", diff)
		}
	})
	t.Run("a member outside the bounds is not caught up", func(t *testing.T) {
		st := aggregate(member{"cell-lhr", wd(1, 3, autoscalingSpec(7, "v1"), memberStatus(1, 4, 4))})
		if st["observedGeneration"] != 2.0 {
			t.Errorf("observedGeneration = %v, want 2", st["observedGeneration"])
		}
	})
	t.Run("a member's count is not the hub's without autoscaling", func(t *testing.T) {
		plain := wd(3, 0, spec(nil, "v1"), map[string]any{"observedGeneration": 2})
		got := call(t, rules.StatusAggregation.LuaScript, "AggregateStatus", 1, plain,
			items(t, rules, member{"cell-lhr", wd(1, 3, spec(4, "v1"), memberStatus(1, 4, 4))}))[0]
		if og := got.(map[string]any)["status"].(map[string]any)["observedGeneration"]; og != 2.0 {
			t.Errorf("observedGeneration = %v, want 2", og)
		}
	})
	t.Run("several members: AutoscalingLimited True wins, autoscaling is no one member's", func(t *testing.T) {
		st := aggregate(
			member{"cell-dfw", wd(1, 3, autoscalingSpec(5, "v1"), withAutoscaling(memberStatus(1, 5, 5,
				cond("AutoscalingLimited", "True", "TooManyReplicas"))))},
			member{"cell-lhr", wd(1, 3, autoscalingSpec(2, "v1"), withAutoscaling(memberStatus(1, 2, 2,
				cond("AutoscalingLimited", "False", "DesiredWithinRange"))))},
		)
		conds, _ := st["conditions"].([]any)
		if len(conds) != 1 || conds[0].(map[string]any)["reason"] != "TooManyReplicas" {
			t.Errorf("conditions = %v, want AutoscalingLimited TooManyReplicas", conds)
		}
		if _, ok := st["autoscaling"]; ok {
			t.Errorf("autoscaling = %v with several members", st["autoscaling"])
		}
		if st["observedGeneration"] != 3.0 {
			t.Errorf("observedGeneration = %v, want 3", st["observedGeneration"])
		}
	})
}
