package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// sized returns container resources: limits and requests of cpu and
// memory, an empty amount leaving the resource out.
func sized(limCPU, limMem, reqCPU, reqMem string) *computev1alpha.ContainerResourceRequirements {
	list := func(cpu, mem string) corev1.ResourceList {
		out := corev1.ResourceList{}
		if cpu != "" {
			out[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			out[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return out
	}
	return &computev1alpha.ContainerResourceRequirements{Limits: list(limCPU, limMem), Requests: list(reqCPU, reqMem)}
}

// withResources sets the first container's resources.
func withResources(r *computev1alpha.ContainerResourceRequirements) func(*computev1alpha.Workload) {
	return func(w *computev1alpha.Workload) { w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Resources = r }
}

// sizeErrors returns the errors of validation on the template's
// resources.
func sizeErrors(errs field.ErrorList) field.ErrorList {
	var out field.ErrorList
	for _, e := range errs {
		if strings.Contains(e.Field, ".resources.") {
			out = append(out, e)
		}
	}
	return out
}

func TestAContainerLargerThanItsInstanceTypeIsRefused(t *testing.T) {
	const c0 = "spec.template.spec.runtime.sandbox.containers[0].resources."
	tests := map[string]struct {
		w         *computev1alpha.Workload
		wantField []string
		wantIn    []string // in the first error's message
	}{
		"requests only, 16 cpu and 64Gi of a 1 vCPU 2Gi type": {
			w:         makeWorkload().with(withResources(sized("", "", "16", "64Gi"))).build(),
			wantField: []string{c0 + "requests.cpu", c0 + "requests.memory"},
			wantIn: []string{`Invalid value: "16"`, `container "app" asks for 16 cpu, more than the instance's 1 cpu (instance type datumcloud/d1-standard-2)`,
				"lower it or choose a larger instance type; no instance type of this control plane is that large, so lower it"},
		},
		"a limit over the type names the smallest type that fits": {
			w:         makeWorkload().with(withResources(sized("1500m", "", "", ""))).build(),
			wantField: []string{c0 + "limits.cpu"},
			wantIn:    []string{"choose a larger instance type; the smallest that fits is datumcloud-d1-standard-4 (2 vCPU, 4Gi memory)"},
		},
		"containers together, the one going over named": {
			w: makeWorkload().with(withResources(sized("", "1Gi", "", ""))).withContainer(computev1alpha.SandboxContainer{
				Name: "side", Image: "envoy", Resources: sized("", "", "", "1025Mi")}).build(),
			wantField: []string{"spec.template.spec.runtime.sandbox.containers[1].resources.requests.memory"},
			wantIn:    []string{`containers "app", "side" together ask for 2049Mi memory, more than the instance's 2Gi memory`},
		},
		"leaving nothing for a container stating no size": {
			w: makeWorkload().withContainer(computev1alpha.SandboxContainer{
				Name: "side", Image: "envoy", Resources: sized("1", "", "", "")}).build(),
			wantField: []string{"spec.template.spec.runtime.sandbox.containers[1].resources.limits.cpu"},
			wantIn:    []string{`leaves less than 1m of the instance's 1 cpu`, `for "app"`},
		},
		"over the runtime requests, which set the instance's size, names them and no type": {
			w: makeWorkload().with(withResources(sized("", "", "3", ""))).with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
			}).build(),
			wantField: []string{c0 + "requests.cpu"},
			wantIn:    []string{"more than the instance's 2 cpu (spec.runtime.resources.requests.cpu): lower it or choose a larger instance type"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := sizeErrors(ValidateWorkloadCreate(tc.w, bound("DFW", "LHR")))
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			if strings.Join(fields, " ") != strings.Join(tc.wantField, " ") {
				t.Fatalf("errors on %v, want %v: %v", fields, tc.wantField, errs)
			}
			for _, want := range tc.wantIn {
				if !strings.Contains(errs[0].Error(), want) {
					t.Errorf("error %q does not say %q", errs[0].Error(), want)
				}
			}
		})
	}
}

func TestContainersThatFitTheirInstanceAreAdmitted(t *testing.T) {
	for name, w := range map[string]*computev1alpha.Workload{
		"requests only, within the type": makeWorkload().with(withResources(sized("", "", "500m", "1Gi"))).build(),
		"the whole type by limits":       makeWorkload().with(withResources(sized("1", "2Gi", "", ""))).build(),
		"runtime requests make room": makeWorkload().with(withResources(sized("", "", "3", ""))).with(func(w *computev1alpha.Workload) {
			w.Spec.Template.Spec.Runtime.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
		}).build(),
		"a share left for the other container": makeWorkload().withContainer(computev1alpha.SandboxContainer{
			Name: "side", Image: "envoy", Resources: sized("999m", "2047Mi", "", "")}).build(),
	} {
		t.Run(name, func(t *testing.T) {
			if errs := sizeErrors(ValidateWorkloadCreate(w, bound("DFW", "LHR"))); len(errs) > 0 {
				t.Errorf("refused: %v", errs)
			}
		})
	}
}

func TestAStoredOversizedWorkloadCanStillBeScaledButNotGrown(t *testing.T) {
	old := makeWorkload().with(withResources(sized("", "", "4", ""))).build()
	scaled := old.DeepCopy()
	scaled.Spec.Placements[0].ScaleSettings.MinReplicas = 5
	if errs := sizeErrors(ValidateWorkloadUpdate(scaled, old, bound("DFW", "LHR"))); len(errs) > 0 {
		t.Errorf("a scale of a Workload stored before the rule is refused: %v", errs)
	}
	grown := old.DeepCopy()
	grown.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Resources = sized("", "", "8", "")
	errs := sizeErrors(ValidateWorkloadUpdate(grown, old, bound("DFW", "LHR")))
	if len(errs) != 1 || errs[0].Field != "spec.template.spec.runtime.sandbox.containers[0].resources.requests.cpu" {
		t.Errorf("a change to the container's size is not checked: %v", errs)
	}
}

func TestWithoutTheCatalogOnlyTheRuntimeRequestsBoundTheContainers(t *testing.T) {
	env := Environment{SkipCityBindings: true, SkipInstanceTypes: true}
	if errs := sizeErrors(ValidateWorkloadCreate(makeWorkload().with(withResources(sized("", "", "16", ""))).build(), env)); len(errs) > 0 {
		t.Errorf("refused without knowing the type's size: %v", errs)
	}
	w := makeWorkload().with(withResources(sized("", "", "16", ""))).with(func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	}).build()
	if errs := sizeErrors(ValidateWorkloadCreate(w, env)); len(errs) != 1 {
		t.Errorf("want the container over the runtime requests refused, got %v", errs)
	}
}
