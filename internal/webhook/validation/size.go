package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/quota/sizing"
)

// validateSize refuses a template whose containers, alone or together, ask
// for more vCPU or memory than the instance has (its instance type, or its
// runtime requests), or leave nothing for the containers that state no
// size: the rule the cells' quota claims and Pods follow (sizing.Resolve),
// checked here so the refusal names the field instead of every Instance
// failing in its cell. An update that leaves the type, the runtime
// requests and every container's resources as they were is not checked
// again (instance type sizes are immutable), so a Workload stored before
// the rule can still be scaled.
func validateSize(w, old *computev1alpha.Workload, env Environment) field.ErrorList {
	rt := &w.Spec.Template.Spec.Runtime
	if rt.Sandbox == nil || old != nil && sameSizeInputs(rt, &old.Spec.Template.Spec.Runtime) {
		return nil
	}
	var errs field.ErrorList
	for _, tl := range sizing.TooLarge(rt, env.InstanceTypes) {
		c := tl.Last()
		p := field.NewPath("spec", "template", "spec", "runtime", "sandbox", "containers").Index(c.Container).
			Child("resources", c.Field, string(tl.Resource))
		errs = append(errs, field.Invalid(p, stated(&rt.Sandbox.Containers[c.Container], c.Field, tl.Resource),
			tl.Detail()+largerType(rt, env.InstanceTypes, tl)))
	}
	return errs
}

// stated returns the quantity a container states in its limits or
// requests (field) for name, as written.
func stated(c *computev1alpha.SandboxContainer, list string, name corev1.ResourceName) string {
	if c.Resources == nil {
		return ""
	}
	l := c.Resources.Limits
	if list == "requests" {
		l = c.Resources.Requests
	}
	q, ok := l[name]
	if !ok {
		return ""
	}
	return q.String()
}

// largerType names the smallest instance type of types the containers
// would fit, for the refusal's message; "" when the instance's size of the
// resource comes from its runtime requests (no type changes it).
func largerType(rt *computev1alpha.InstanceRuntimeSpec, types catalog.Catalog, tl *sizing.TooLargeError) string {
	if tl.FromRequests {
		return ""
	}
	var best *computev1alpha.InstanceType
	try := rt.DeepCopy()
	for i := range types {
		t := &types[i]
		if t.Spec.Lifecycle.Phase != computev1alpha.InstanceTypePhaseActive && t.Spec.Lifecycle.Phase != "" {
			continue
		}
		try.Resources.InstanceType = t.Name
		if tooLargeIn(sizing.TooLarge(try, types), tl.Resource) {
			continue
		}
		if best == nil || smaller(t, best) {
			best = t
		}
	}
	if best == nil {
		return "; no instance type of this control plane is that large, so lower it"
	}
	cpu, mem := catalog.Size(best)
	return fmt.Sprintf("; the smallest that fits is %s (%s vCPU, %s memory)", best.Name, cpu.String(), mem.String())
}

// tooLargeIn reports whether errs has one of resource name.
func tooLargeIn(errs []*sizing.TooLargeError, name corev1.ResourceName) bool {
	for _, e := range errs {
		if e.Resource == name {
			return true
		}
	}
	return false
}

// smaller orders instance types by vCPU, then memory, then name.
func smaller(a, b *computev1alpha.InstanceType) bool {
	if c := a.Spec.Resources.CPU.Cmp(b.Spec.Resources.CPU); c != 0 {
		return c < 0
	}
	if c := a.Spec.Resources.Memory.Cmp(b.Spec.Resources.Memory); c != 0 {
		return c < 0
	}
	return a.Name < b.Name
}

// sameSizeInputs reports whether two runtimes size alike: the same
// instance type (a retired spelling is its replacement), runtime requests
// and containers' names and resources.
func sameSizeInputs(a, b *computev1alpha.InstanceRuntimeSpec) bool {
	if catalog.Canonical(a.Resources.InstanceType) != catalog.Canonical(b.Resources.InstanceType) ||
		!equality.Semantic.DeepEqual(a.Resources.Requests, b.Resources.Requests) ||
		a.Sandbox == nil || b.Sandbox == nil || len(a.Sandbox.Containers) != len(b.Sandbox.Containers) {
		return false
	}
	for i := range a.Sandbox.Containers {
		ca, cb := &a.Sandbox.Containers[i], &b.Sandbox.Containers[i]
		if ca.Name != cb.Name || !equality.Semantic.DeepEqual(ca.Resources, cb.Resources) {
			return false
		}
	}
	return true
}
