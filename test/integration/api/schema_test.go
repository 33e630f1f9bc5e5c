package api_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

const validTemplate = `
metadata:
  labels: {app: web}
spec:
  runtime:
    resources: {instanceType: datumcloud/d1-standard-2}
    sandbox:
      containers:
      - name: app
        image: nginx:1.27
        ports: [{name: http, port: 8080}]
`

func workloadYAML() string {
	return `
apiVersion: compute.datumapis.com/v1alpha
kind: Workload
metadata: {name: placeholder}
spec:
  template:` + indent(validTemplate, 4) + `
  placements:
  - name: default
    cityCodes: [DFW, LHR]
    scaleSettings: {minReplicas: 2}
`
}

func deploymentYAML() string {
	return `
apiVersion: compute.datumapis.com/v1alpha
kind: WorkloadDeployment
metadata: {name: placeholder}
spec:
  workloadRef: {name: web, uid: 0b8a3a43-4a4f-4b8e-9b1a-6f1d0e2c9d11}
  placementName: default
  cityCode: DFW
  template:` + indent(validTemplate, 4) + `
  scaleSettings: {minReplicas: 2}
`
}

func instanceYAML() string {
	return `
apiVersion: compute.datumapis.com/v1alpha
kind: Instance
metadata: {name: placeholder}
spec:` + indent(strings.SplitN(validTemplate, "spec:\n", 2)[1], 0) + `
`
}

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pad + l
	}
	return "\n" + strings.Join(lines, "\n")
}

var objectSeq atomic.Int64

// object decodes a manifest and applies mutations: each is a path (dotted,
// with [i] for list items) and a value; a nil value removes the field.
func object(t *testing.T, manifest string, mutations ...mutation) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(manifest), &m); err != nil {
		t.Fatalf("bad test manifest: %v", err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetName(fmt.Sprintf("obj-%d", objectSeq.Add(1)))
	for _, mu := range mutations {
		mu(t, u.Object)
	}
	return u
}

type mutation func(t *testing.T, obj map[string]any)

// set replaces the value at a path such as "spec.placements[0].cityCodes".
func set(path string, value any) mutation {
	return func(t *testing.T, obj map[string]any) {
		t.Helper()
		parent, key := walk(t, obj, path)
		switch p := parent.(type) {
		case map[string]any:
			if value == nil {
				delete(p, key.(string))
				return
			}
			p[key.(string)] = value
		case []any:
			p[key.(int)] = value
		}
	}
}

// walk returns the container holding the last path element and its key.
func walk(t *testing.T, obj map[string]any, path string) (any, any) {
	t.Helper()
	var cur any = obj
	parts := strings.Split(path, ".")
	for i, part := range parts {
		name, idx, hasIdx := strings.Cut(part, "[")
		last := i == len(parts)-1
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("path %q: %q is not an object", path, name)
		}
		if !hasIdx {
			if last {
				return m, name
			}
			next, ok := m[name]
			if !ok {
				next = map[string]any{}
				m[name] = next
			}
			cur = next
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(idx, "]"))
		if err != nil {
			t.Fatalf("path %q: bad index in %q", path, part)
		}
		list, ok := m[name].([]any)
		if !ok || n >= len(list) {
			t.Fatalf("path %q: no item %d in %q", path, n, name)
		}
		if last {
			return list, n
		}
		cur = list[n]
	}
	return nil, nil
}

func TestSchemaAcceptsAndRejects(t *testing.T) {
	tests := map[string]struct {
		gvr       schema.GroupVersionResource
		manifest  func() string
		mutate    []mutation
		wantField string // empty: must be accepted
		wantText  string
	}{
		"a minimal workload is accepted": {
			gvr: workloadsGVR, manifest: workloadYAML,
		},
		"a workload with a virtual machine runtime is accepted": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{
				set("spec.template.spec.runtime.sandbox", nil),
				set("spec.template.spec.runtime.virtualMachine", map[string]any{"volumeAttachments": []any{map[string]any{"name": "boot"}}}),
				set("spec.template.spec.volumes", []any{map[string]any{"name": "boot", "disk": map[string]any{"image": "debian-12"}}}),
			},
		},
		"a workload with two placements and max replicas is accepted": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{
				set("spec.placements", []any{
					map[string]any{"name": "a", "cityCodes": []any{"DFW"}, "scaleSettings": map[string]any{"minReplicas": int64(1), "maxReplicas": int64(3), "instanceManagementPolicy": "Parallel"}},
					map[string]any{"name": "b", "cityCodes": []any{"DFW", "SIN"}, "scaleSettings": map[string]any{"minReplicas": int64(0)}},
				}),
			},
		},
		"a workload without placements is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.placements", []any{})},
			wantField: "spec.placements", wantText: "at least 1 items",
		},
		"a workload with duplicate placement names is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.placements", []any{
				map[string]any{"name": "a", "cityCodes": []any{"DFW"}, "scaleSettings": map[string]any{"minReplicas": int64(1)}},
				map[string]any{"name": "a", "cityCodes": []any{"LHR"}, "scaleSettings": map[string]any{"minReplicas": int64(1)}},
			})},
			wantField: "spec.placements[1]", wantText: "Duplicate value",
		},
		"a workload with a duplicate city code is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.placements[0].cityCodes", []any{"DFW", "DFW"})},
			wantField: "spec.placements[0].cityCodes[1]", wantText: "Duplicate value",
		},
		"a workload with a lower-case city code is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.placements[0].cityCodes", []any{"dfw"})},
			wantField: "spec.placements[0].cityCodes[0]", wantText: "should match",
		},
		"a placement that says nothing about where is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.placements[0].cityCodes", []any{})},
			wantField: "spec.placements[0]", wantText: "exactly one of locations or locationSelector is required",
		},
		"a placement with locations and a selector is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{
				set("spec.placements[0].locations", []any{map[string]any{"name": "dfw"}}),
				set("spec.placements[0].locationSelector", map[string]any{"matchLabels": map[string]any{"topology.datum.net/city-code": "DFW"}}),
			},
			wantField: "spec.placements[0]", wantText: "exactly one of locations or locationSelector may be set",
		},
		"a workload with negative min replicas is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.placements[0].scaleSettings.minReplicas", int64(-1))},
			wantField: "spec.placements[0].scaleSettings.minReplicas", wantText: "greater than or equal to 0",
		},
		"a workload with max replicas below min replicas is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.placements[0].scaleSettings.maxReplicas", int64(1))},
			wantField: "spec.placements[0].scaleSettings.maxReplicas", wantText: "maxReplicas must be greater than or equal to minReplicas",
		},
		"a workload with an unknown management policy is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.placements[0].scaleSettings.instanceManagementPolicy", "Random")},
			wantField: "spec.placements[0].scaleSettings.instanceManagementPolicy", wantText: "Unsupported value",
		},
		"a workload with both sandbox and virtual machine is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{
				set("spec.template.spec.runtime.virtualMachine", map[string]any{"volumeAttachments": []any{map[string]any{"name": "boot"}}}),
			},
			wantField: "spec.template.spec.runtime", wantText: "exactly one of sandbox or virtualMachine must be set",
		},
		"a workload with neither sandbox nor virtual machine is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.template.spec.runtime.sandbox", nil)},
			wantField: "spec.template.spec.runtime", wantText: "exactly one of sandbox or virtualMachine must be set",
		},
		"a workload with an empty container list is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.template.spec.runtime.sandbox.containers", []any{})},
			wantField: "spec.template.spec.runtime.sandbox.containers", wantText: "at least 1 items",
		},
		"a workload with port 0 is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.template.spec.runtime.sandbox.containers[0].ports", []any{map[string]any{"name": "http", "port": int64(0)}})},
			wantField: "spec.template.spec.runtime.sandbox.containers[0].ports[0].port", wantText: "greater than or equal to 1",
		},
		"a workload with port 70000 is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.template.spec.runtime.sandbox.containers[0].ports", []any{map[string]any{"name": "http", "port": int64(70000)}})},
			wantField: "spec.template.spec.runtime.sandbox.containers[0].ports[0].port", wantText: "less than or equal to 65535",
		},
		"a workload with a container without an image is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.template.spec.runtime.sandbox.containers[0].image", nil)},
			wantField: "spec.template.spec.runtime.sandbox.containers[0].image", wantText: "Required value",
		},
		"a workload without an instance type is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.template.spec.runtime.resources.instanceType", nil)},
			wantField: "spec.template.spec.runtime.resources.instanceType", wantText: "Required value",
		},
		"a volume with two sources is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.template.spec.volumes", []any{map[string]any{"name": "v", "configMap": map[string]any{"name": "c"}, "secret": map[string]any{"name": "s"}}})},
			wantField: "spec.template.spec.volumes[0]", wantText: "exactly one of disk, configMap or secret must be set",
		},
		"a workload in Datum's shapes is accepted": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{
				set("spec.template.metadata.name", "ignored"),
				set("spec.template.spec.volumes", []any{
					map[string]any{"name": "creds", "secret": map[string]any{"secretName": "db", "defaultMode": int64(256), "optional": false,
						"items": []any{map[string]any{"key": "password", "path": "db/password"}}}},
					map[string]any{"name": "conf", "configMap": map[string]any{"name": "app", "items": []any{map[string]any{"key": "a", "path": "a"}}}},
					map[string]any{"name": "data", "disk": map[string]any{"deviceName": "data", "template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"purpose": "data"}},
						"spec": map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "20Gi"}},
							"populator": map[string]any{"filesystem": map[string]any{"type": "ext4"}}}}}},
				}),
				set("spec.template.spec.runtime.sandbox.containers[0].env", []any{
					map[string]any{"name": "P", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db", "key": "password"}}},
					map[string]any{"name": "M", "valueFrom": map[string]any{"configMapKeyRef": map[string]any{"name": "app", "key": "mode", "optional": true}}},
				}),
				set("spec.template.spec.networkInterfaces", []any{map[string]any{
					"network": map[string]any{"name": "default", "namespace": "shared"},
					"networkPolicy": map[string]any{"ingress": []any{map[string]any{
						"ports": []any{map[string]any{"port": "http"}, map[string]any{"protocol": "UDP", "port": int64(27000), "endPort": int64(27100)}},
						"from":  []any{map[string]any{"ipBlock": map[string]any{"cidr": "0.0.0.0/0", "except": []any{"10.0.0.0/8"}}}},
					}}},
				}}),
				set("spec.placements[0].scaleSettings.metrics", []any{map[string]any{"resource": map[string]any{
					"name": "cpu", "target": map[string]any{"averageUtilization": int64(70)}}}}),
			},
		},
		"a file mode above 0777 is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.template.spec.volumes", []any{map[string]any{"name": "v", "secret": map[string]any{"secretName": "s", "defaultMode": int64(1024)}}})},
			wantField: "spec.template.spec.volumes[0].secret.defaultMode", wantText: "less than or equal to 511",
		},
		"a port range ending above 65535 is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.template.spec.networkInterfaces", []any{map[string]any{
				"network":       map[string]any{"name": "default"},
				"networkPolicy": map[string]any{"ingress": []any{map[string]any{"ports": []any{map[string]any{"port": int64(1), "endPort": int64(70000)}}}}},
			}})},
			wantField: "spec.template.spec.networkInterfaces[0].networkPolicy.ingress[0].ports[0].endPort", wantText: "less than or equal to 65535",
		},
		"a filesystem other than ext4 is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.template.spec.volumes", []any{map[string]any{"name": "d", "disk": map[string]any{
				"template": map[string]any{"spec": map[string]any{"populator": map[string]any{"filesystem": map[string]any{"type": "xfs"}}}}}}})},
			wantField: "spec.template.spec.volumes[0].disk.template.spec.populator.filesystem.type", wantText: "Unsupported value",
		},
		"a negative revision history limit is rejected": {
			gvr: workloadsGVR, manifest: workloadYAML, mutate: []mutation{set("spec.revisionHistoryLimit", int64(-1))},
			wantField: "spec.revisionHistoryLimit", wantText: "greater than or equal to 0",
		},
		"a minimal workload deployment is accepted": {
			gvr: deploymentsGVR, manifest: deploymentYAML,
		},
		"a workload deployment with a bad city code is rejected": {
			gvr: deploymentsGVR, manifest: deploymentYAML, mutate: []mutation{set("spec.cityCode", "DALLAS")},
			wantField: "spec.cityCode", wantText: "should match",
		},
		"a workload deployment without a workload reference is rejected": {
			gvr: deploymentsGVR, manifest: deploymentYAML, mutate: []mutation{set("spec.workloadRef", nil)},
			wantField: "spec.workloadRef", wantText: "Required value",
		},
		"a workload deployment with negative replicas is rejected": {
			gvr: deploymentsGVR, manifest: deploymentYAML, mutate: []mutation{set("spec.replicas", int64(-2))},
			wantField: "spec.replicas", wantText: "greater than or equal to 0",
		},
		"a minimal instance is accepted": {
			gvr: instancesGVR, manifest: instanceYAML,
		},
		"an instance with scheduling gates is accepted": {
			gvr: instancesGVR, manifest: instanceYAML, mutate: []mutation{set("spec.controller", map[string]any{"templateHash": "abc", "schedulingGates": []any{map[string]any{"name": "Quota"}}})},
		},
		"an instance with duplicate scheduling gates is rejected": {
			gvr: instancesGVR, manifest: instanceYAML, mutate: []mutation{set("spec.controller", map[string]any{"templateHash": "abc", "schedulingGates": []any{map[string]any{"name": "Quota"}, map[string]any{"name": "Quota"}}})},
			wantField: "spec.controller.schedulingGates[1]", wantText: "Duplicate value",
		},
		"an instance with duplicate container names is rejected": {
			gvr: instancesGVR, manifest: instanceYAML, mutate: []mutation{set("spec.runtime.sandbox.containers", []any{map[string]any{"name": "a", "image": "x"}, map[string]any{"name": "a", "image": "y"}})},
			wantField: "spec.runtime.sandbox.containers[1]", wantText: "Duplicate value",
		},
		"an instance with an invalid protocol is rejected": {
			gvr: instancesGVR, manifest: instanceYAML, mutate: []mutation{set("spec.runtime.sandbox.containers[0].ports", []any{map[string]any{"name": "dns", "port": int64(53), "protocol": "ICMP"}})},
			wantField: "spec.runtime.sandbox.containers[0].ports[0].protocol", wantText: "Unsupported value",
		},
		"an instance with a virtual machine without volumes is rejected": {
			gvr: instancesGVR, manifest: instanceYAML, mutate: []mutation{
				set("spec.runtime.sandbox", nil),
				set("spec.runtime.virtualMachine", map[string]any{"volumeAttachments": []any{}}),
			},
			wantField: "spec.runtime.virtualMachine.volumeAttachments", wantText: "at least 1 items",
		},
	}
	ctx := context.Background()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := object(t, tc.manifest(), tc.mutate...)
			_, err := dyn.Resource(tc.gvr).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("valid object rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("invalid object accepted; want an error on %s", tc.wantField)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !hasCause(err, tc.wantField, tc.wantText) {
				t.Fatalf("error does not name field %q with %q:\n%v", tc.wantField, tc.wantText, err)
			}
		})
	}
}

// hasCause reports whether a status error has a cause on exactly the field
// whose message contains text.
func hasCause(err error, field, text string) bool {
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == field && strings.Contains(c.Message, text) {
			return true
		}
	}
	return false
}

func TestImmutableDeploymentFields(t *testing.T) {
	ctx := context.Background()
	tests := map[string]struct {
		path, value, wantField, wantText string
	}{
		"the city code cannot change":          {"spec.cityCode", "LHR", "spec.cityCode", "cityCode is immutable"},
		"the placement name cannot change":     {"spec.placementName", "other", "spec.placementName", "placementName is immutable"},
		"the workload reference cannot change": {"spec.workloadRef.name", "other", "spec.workloadRef", "workloadRef is immutable"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			created, err := dyn.Resource(deploymentsGVR).Namespace("default").Create(ctx, object(t, deploymentYAML()), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			set(tc.path, tc.value)(t, created.Object)
			_, err = dyn.Resource(deploymentsGVR).Namespace("default").Update(ctx, created, metav1.UpdateOptions{})
			if err == nil || !hasCause(err, tc.wantField, tc.wantText) {
				t.Fatalf("want %q on %s, got %v", tc.wantText, tc.wantField, err)
			}
		})
	}
	t.Run("the template and replicas can change", func(t *testing.T) {
		created, err := dyn.Resource(deploymentsGVR).Namespace("default").Create(ctx, object(t, deploymentYAML()), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		set("spec.template.spec.runtime.sandbox.containers[0].image", "nginx:1.28")(t, created.Object)
		set("spec.replicas", int64(5))(t, created.Object)
		if _, err := dyn.Resource(deploymentsGVR).Namespace("default").Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("mutable fields rejected: %v", err)
		}
	})
}
