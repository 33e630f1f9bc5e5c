package federation_test

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkInterpreter times each script of the interpreter per call the way
// karmada-controller-manager runs it (luavm.RunScript): on a Lua state
// reused from its pool, the script is loaded — parsed and compiled — on
// every call, the object converted into Lua, the function called and its
// result converted back. "load only" is the DoString part alone, the share
// of a call that compiling the script takes.
//
// Per P1 Workload (3 cities), Karmada runs GetReplicas once per hub copy
// (detector), ReflectStatus and InterpretHealth once per cell WD status
// event (work status controller) and AggregateStatus once per binding
// status change (binding status controller).
//
// Run with:
//
//	go test -run '^$' -bench Interpreter -benchmem ./config/federation/
func BenchmarkInterpreter(b *testing.B) {
	rules := customizations(b)
	hub := jsonValue(b, wd(3, 0, benchSpec(), map[string]any{"observedGeneration": 2}))
	statuses := jsonValue(b, items(b, rules, benchMember("cell-dfw"), benchMember("cell-lhr"), benchMember("cell-sin")))
	memberObj := jsonValue(b, benchMember("cell-lhr").obj)
	data, _ := json.Marshal(memberObj)
	b.Logf("member WorkloadDeployment: %d bytes of JSON", len(data))

	for _, op := range []struct {
		name, script, fn string
		nret             int
		args             []any
	}{
		{"GetReplicas", rules.ReplicaResource.LuaScript, "GetReplicas", 2, []any{memberObj}},
		{"ReflectStatus", rules.StatusReflection.LuaScript, "ReflectStatus", 1, []any{memberObj}},
		{"InterpretHealth", rules.HealthInterpretation.LuaScript, "InterpretHealth", 1, []any{memberObj}},
		{"AggregateStatus of 3 members", rules.StatusAggregation.LuaScript, "AggregateStatus", 1, []any{hub, statuses}},
	} {
		b.Run(op.name+"/call", func(b *testing.B) {
			ls := newState(b)
			defer ls.Close()
			b.ReportAllocs()
			for b.Loop() {
				out, err := run(ls, op.script, op.fn, op.nret, op.args...)
				if err != nil {
					b.Fatal(err)
				}
				// Karmada converts every result back through JSON.
				if _, err := json.Marshal(out[0]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(op.name+"/load only", func(b *testing.B) {
			ls := newState(b)
			defer ls.Close()
			b.ReportAllocs()
			for b.Loop() {
				if err := ls.DoString(op.script); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchSpec is a WorkloadDeployment spec of the size compute writes: a
// sandbox with two containers, environment, resources and a network.
func benchSpec() map[string]any {
	s := spec(nil, "ghcr.io/example/web:1.2.3")
	env := []any{}
	for i := range 6 {
		env = append(env, map[string]any{"name": fmt.Sprintf("VAR_%d", i), "value": fmt.Sprintf("value-%d", i)})
	}
	s["template"] = map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "web", "tier": "frontend"}},
		"spec": map[string]any{
			"runtime": map[string]any{
				"resources": map[string]any{"instanceType": "datumcloud/d1-standard-2"},
				"sandbox": map[string]any{"containers": []any{
					map[string]any{"name": "app", "image": "ghcr.io/example/web:1.2.3", "env": env,
						"ports": []any{map[string]any{"name": "http", "port": 8080}}},
					map[string]any{"name": "sidecar", "image": "ghcr.io/example/proxy:0.9",
						"ports": []any{map[string]any{"name": "admin", "port": 9901}}},
				}},
			},
			"networkInterfaces": []any{map[string]any{
				"network":          map[string]any{"name": "default"},
				"networkPolicy":    map[string]any{"ingress": []any{map[string]any{"ports": []any{map[string]any{"port": 8080}}}}},
				"ipFamilies":       []any{"IPv4", "IPv6"},
				"ipv4AddressPools": []any{"public"},
			}},
		},
	}
	return s
}

// benchMember is a cell's WorkloadDeployment in cluster as Karmada sees
// it: labels and annotations compute and Karmada put on it, the spec and the
// status the cell's controller writes.
func benchMember(cluster string) member {
	obj := wd(2, 3, benchSpec(), memberStatus(2, 2, 2,
		cond("Available", "True", "MinimumReplicasAvailable"),
		cond("Progressing", "False", "Complete"),
		cond("ReplicasReady", "True", "AllReplicasReady"),
		cond("QuotaGranted", "True", "Granted")))
	md := obj["metadata"].(map[string]any)
	md["uid"] = "6f1c7a9e-2d7b-4c55-9e1f-0c0d6d9f1a2b"
	md["resourceVersion"] = "123456"
	md["creationTimestamp"] = "2026-01-01T00:00:00Z"
	md["labels"] = map[string]any{
		"compute.datumapis.com/workload-name":           "web",
		"compute.datumapis.com/workload-uid":            "4d7e3c1a-0a8b-4f5e-b1f7-8a9a3c2d1e0f",
		"compute.datumapis.com/upstream-cluster-name":   "project-default",
		"compute.datumapis.com/upstream-namespace":      "default",
		"topology.datum.net/city-code":                  "LHR",
		"propagationpolicy.karmada.io/permanent-id":     "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9",
		"resourcebinding.karmada.io/permanent-id":       "1a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9",
		"work.karmada.io/permanent-id":                  "2a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9",
		"karmada.io/managed":                            "true",
		"app.kubernetes.io/managed-by":                  "compute",
		"compute.datumapis.com/placement-name":          "default",
		"compute.datumapis.com/workload-deployment-uid": "5e1c7a9e-2d7b-4c55-9e1f-0c0d6d9f1a2b",
	}
	annotations := md["annotations"].(map[string]any)
	for k, v := range map[string]any{
		"compute.datumapis.com/upstream-generation":       "3",
		"compute.datumapis.com/upstream-uid":              "7e1c7a9e-2d7b-4c55-9e1f-0c0d6d9f1a2b",
		"propagationpolicy.karmada.io/name":               "city-lhr",
		"propagationpolicy.karmada.io/namespace":          "ns-4d7e3c1a",
		"resourcebinding.karmada.io/name":                 "web-workloaddeployment",
		"resourcebinding.karmada.io/namespace":            "ns-4d7e3c1a",
		"work.karmada.io/name":                            "web-6d5f8b7c9",
		"work.karmada.io/namespace":                       "karmada-es-" + cluster,
		"resourcetemplate.karmada.io/managed-labels":      "compute.datumapis.com/workload-name,topology.datum.net/city-code",
		"resourcetemplate.karmada.io/managed-annotations": "compute.datumapis.com/upstream-generation",
	} {
		annotations[k] = v
	}
	return member{cluster, obj}
}
