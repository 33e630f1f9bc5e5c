// Package sizing is the one rule for how much vCPU and memory an Instance
// gets and claims: Resolve decides each container's size and the whole
// Instance's, and the cell's quota claims (the total), the Kubernetes
// runtime provider (each container's limits), admission (the refusal of a
// template that does not fit its instance type) and the CLI's quota view
// all call it, so what the cell claims is what the Pod gets. It is pure
// (API types and a catalog the caller read) so the CLI and the webhook can
// import it without the cell.
package sizing

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
)

// ErrUnsizable means an Instance's vCPU or memory cannot be resolved: its
// instance type is not in the catalog and neither its containers nor its
// instance requests say how much it needs, or its containers ask for more
// than the instance has (a *TooLargeError).
var ErrUnsizable = errors.New("instance cannot be sized")

// Mebibyte is the number of bytes in a MiB, the unit of memory sizes.
const Mebibyte = 1 << 20

// Size is an amount of vCPU and memory: what an Instance claims besides
// itself, or what one of its containers gets.
type Size struct {
	// MilliCPU is the vCPU in millicores (compute.datumapis.com/vcpus).
	MilliCPU int64
	// MemoryMiB is the memory in MiB (compute.datumapis.com/memory).
	MemoryMiB int64
}

// Limits returns the size as a container's resource list: cpu in
// millicores, memory in bytes (whole MiB).
func (s Size) Limits() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(s.MilliCPU, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(s.MemoryMiB*Mebibyte, resource.BinarySI),
	}
}

// set sets the amount of one resource.
func (s *Size) set(name corev1.ResourceName, n int64) {
	if name == corev1.ResourceCPU {
		s.MilliCPU = n
		return
	}
	s.MemoryMiB = n
}

// Sizes is what Resolve decides for an Instance.
type Sizes struct {
	// Total is the Instance's size: what its quota claim asks for, and the
	// sum of Containers when it has any.
	Total Size
	// Containers is the size of each sandbox container, in the order of
	// the spec: its Pod container's limits. Nil for a virtual machine.
	Containers []Size
}

// Of returns the vCPU and memory an Instance claims (Resolve's total).
func Of(inst *computev1alpha.Instance, types catalog.Catalog) (Size, error) {
	s, err := Resolve(&inst.Spec.Runtime, types)
	return s.Total, err
}

// Resolve decides the size of an Instance of runtime rt and of each of its
// containers, for cpu and for memory on its own:
//
//   - the instance's size is its spec.runtime.resources.requests, else its
//     instance type from types, the InstanceType catalog of the plane (a
//     retired spelling finds its replacement);
//   - a container that states its own size (its limit, else its request)
//     gets that;
//   - the containers that state none share what the others leave of the
//     instance's size evenly, the first taking the remainder; the total
//     is then the instance's size;
//   - when every container states its own, the total is their sum (no
//     more than the instance's size, which the catalog need not know).
//
// CPU rounds up to the millicore and memory up to the MiB, each container
// on its own, so the total is exactly the sum of the containers and never
// less than they may use. Containers that ask for more than the instance
// has, together or alone, or leave nothing for the others, are a
// *TooLargeError; an instance that needs its type and whose type the
// catalog lacks wraps ErrUnsizable too.
func Resolve(rt *computev1alpha.InstanceRuntimeSpec, types catalog.Catalog) (Sizes, error) {
	var containers []computev1alpha.SandboxContainer
	if rt.Sandbox != nil {
		containers = rt.Sandbox.Containers
	}
	out := Sizes{}
	if len(containers) > 0 {
		out.Containers = make([]Size, len(containers))
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if err := resolve(rt, types, name, &out); err != nil {
			return Sizes{}, err
		}
	}
	return out, nil
}

// TooLarge returns, for cpu and for memory, why rt's containers do not fit
// the instance (see Resolve); none when they fit or the instance's size is
// unknown.
func TooLarge(rt *computev1alpha.InstanceRuntimeSpec, types catalog.Catalog) []*TooLargeError {
	var out []*TooLargeError
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		s := Sizes{}
		if rt.Sandbox != nil {
			s.Containers = make([]Size, len(rt.Sandbox.Containers))
		}
		var tl *TooLargeError
		if errors.As(resolve(rt, types, name, &s), &tl) {
			out = append(out, tl)
		}
	}
	return out
}

// resolve decides one resource of out by the rule of Resolve.
func resolve(rt *computev1alpha.InstanceRuntimeSpec, types catalog.Catalog, name corev1.ResourceName, out *Sizes) error {
	var containers []computev1alpha.SandboxContainer
	if rt.Sandbox != nil {
		containers = rt.Sandbox.Containers
	}
	own, unsized := ownSizes(containers, name)
	inst, known := instanceSize(rt, types, name)
	switch {
	case known:
		if err := fits(rt, name, inst, own, unsized, containers); err != nil {
			return err
		}
	case len(containers) == 0 || len(unsized) > 0:
		return fmt.Errorf("%w: instance type %q is not in the catalog and the instance states no %s of its own (spec.runtime.resources.requests, or every container's limits or requests)",
			ErrUnsizable, rt.Resources.InstanceType, name)
	}
	var sum int64
	for _, c := range own {
		out.Containers[c.Container].set(name, c.Amount)
		sum += c.Amount
	}
	if len(containers) > 0 && len(unsized) == 0 {
		out.Total.set(name, sum)
		return nil
	}
	out.Total.set(name, inst.amount)
	if len(unsized) == 0 {
		return nil
	}
	left := inst.amount - sum
	share := left / int64(len(unsized))
	for _, i := range unsized {
		out.Containers[i].set(name, share)
	}
	out.Containers[unsized[0]].set(name, share+left-share*int64(len(unsized)))
	return nil
}

// ownSizes returns what each container states of name for itself, and the
// indexes of those that state nothing.
func ownSizes(containers []computev1alpha.SandboxContainer, name corev1.ResourceName) (own []Claim, unsized []int) {
	for i := range containers {
		if c, ok := ownSize(&containers[i], i, name); ok {
			own = append(own, c)
		} else {
			unsized = append(unsized, i)
		}
	}
	return own, unsized
}

// fits returns the *TooLargeError of containers whose own sizes (own)
// exceed the instance's size, or leave less than one unit for each of the
// unsized ones; nil when they fit.
func fits(rt *computev1alpha.InstanceRuntimeSpec, name corev1.ResourceName, inst source, own []Claim, unsized []int, containers []computev1alpha.SandboxContainer) error {
	e := &TooLargeError{Resource: name, Instance: inst.amount, InstanceType: rt.Resources.InstanceType, FromRequests: inst.fromRequests}
	var sum int64
	for k, c := range own {
		sum += c.Amount
		if sum > inst.amount {
			e.Claims = own[:k+1]
			return e
		}
	}
	if len(own) == 0 || inst.amount-sum >= int64(len(unsized)) {
		return nil
	}
	e.Claims = own
	for _, i := range unsized {
		e.Starved = append(e.Starved, containers[i].Name)
	}
	return e
}

// source is the instance's size of one resource and where it comes from.
type source struct {
	// amount is in millicores or MiB.
	amount int64
	// fromRequests is true when spec.runtime.resources.requests sets it,
	// false when the instance type does.
	fromRequests bool
}

// instanceSize returns the instance's size of name: its runtime requests,
// else its instance type; false when neither says.
func instanceSize(rt *computev1alpha.InstanceRuntimeSpec, types catalog.Catalog, name corev1.ResourceName) (source, bool) {
	if q, ok := rt.Resources.Requests[name]; ok && q.Sign() > 0 {
		return source{amount: Amount(name, q), fromRequests: true}, true
	}
	t := types.Find(rt.Resources.InstanceType)
	if t == nil {
		return source{}, false
	}
	cpu, mem := catalog.Size(t)
	if name == corev1.ResourceCPU {
		return source{amount: Amount(name, cpu)}, true
	}
	return source{amount: Amount(name, mem)}, true
}

// Claim is what one container states for itself of one resource.
type Claim struct {
	// Container is the container's index in the sandbox, Name its name.
	Container int
	Name      string
	// Field is "limits" or "requests": which of the container's lists
	// stated it (the limit, when both do).
	Field string
	// Amount is in millicores or MiB, rounded up.
	Amount int64
}

// ownSize returns what container c (at index i) states of name: its limit,
// else its request; false when it states neither (or only zero).
func ownSize(c *computev1alpha.SandboxContainer, i int, name corev1.ResourceName) (Claim, bool) {
	if c.Resources == nil {
		return Claim{}, false
	}
	if q, ok := c.Resources.Limits[name]; ok && q.Sign() > 0 {
		return Claim{Container: i, Name: c.Name, Field: "limits", Amount: Amount(name, q)}, true
	}
	if q, ok := c.Resources.Requests[name]; ok && q.Sign() > 0 {
		return Claim{Container: i, Name: c.Name, Field: "requests", Amount: Amount(name, q)}, true
	}
	return Claim{}, false
}

// MaxAmount is the most millicores or MiB one quantity counts for (about
// 275 million cores, 256 PiB): a larger one is counted as this much, so
// no sum of them overflows and no Pod gets less than it asked for because
// a huge number wrapped round.
const MaxAmount = 1 << 38

// maxQuantities are MaxAmount as quantities.
var maxQuantities = map[corev1.ResourceName]resource.Quantity{
	corev1.ResourceCPU:    *resource.NewMilliQuantity(MaxAmount, resource.DecimalSI),
	corev1.ResourceMemory: *resource.NewQuantity(MaxAmount*Mebibyte, resource.BinarySI),
}

// Amount returns q in the unit of its resource, rounded up: millicores for
// cpu, MiB for memory; at most MaxAmount.
func Amount(name corev1.ResourceName, q resource.Quantity) int64 {
	if q.Cmp(maxQuantities[name]) > 0 {
		return MaxAmount
	}
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return ceilDiv(q.Value(), Mebibyte)
}

// Format writes an amount of name (millicores or MiB) as a quantity.
func Format(name corev1.ResourceName, n int64) string {
	if name == corev1.ResourceCPU {
		return resource.NewMilliQuantity(n, resource.DecimalSI).String()
	}
	q, err := resource.ParseQuantity(strconv.FormatInt(n, 10) + "Mi")
	if err != nil {
		return strconv.FormatInt(n, 10) + "Mi"
	}
	return q.String()
}

// TooLargeError is a sandbox whose containers ask for more of a resource
// than the instance has. It wraps ErrUnsizable.
type TooLargeError struct {
	// Resource is cpu or memory.
	Resource corev1.ResourceName
	// Claims are the containers that state their own size, up to the one
	// whose size goes over the instance's (the last), or all of them when
	// Starved is set.
	Claims []Claim
	// Instance is the instance's size (millicores or MiB).
	Instance int64
	// InstanceType is the instance's type; FromRequests is true when the
	// instance's size is its spec.runtime.resources.requests instead.
	InstanceType string
	FromRequests bool
	// Starved names the containers stating no size of their own that the
	// others leave nothing for; empty when the others exceed the size.
	Starved []string
}

// Last is the claim at fault: the one that goes over the instance's size,
// or the last of them when they leave nothing for the others.
func (e *TooLargeError) Last() Claim { return e.Claims[len(e.Claims)-1] }

// Detail says what is too large, how large the instance is and what to do,
// without naming the field (admission puts it on the field's path).
func (e *TooLargeError) Detail() string {
	r := e.Resource
	var sum int64
	names := make([]string, len(e.Claims))
	for k, c := range e.Claims {
		sum += c.Amount
		names[k] = c.Name
	}
	much := Format(r, sum)
	if sum >= MaxAmount {
		much = "over " + Format(r, MaxAmount)
	}
	who := fmt.Sprintf("container %s asks for %s %s", quoteAll(names), much, r)
	if len(names) > 1 {
		who = fmt.Sprintf("containers %s together ask for %s %s", quoteAll(names), much, r)
	}
	has := fmt.Sprintf("the instance's %s %s (instance type %s)", Format(r, e.Instance), r, e.InstanceType)
	if e.FromRequests {
		has = fmt.Sprintf("the instance's %s %s (spec.runtime.resources.requests.%s)", Format(r, e.Instance), r, r)
	}
	if len(e.Starved) > 0 {
		return fmt.Sprintf("%s, which leaves less than %s of %s for %s, stating no %s of its own: lower it, state a size for each container, or choose a larger instance type",
			who, Format(r, 1), has, quoteAll(e.Starved), r)
	}
	return fmt.Sprintf("%s, more than %s: lower it or choose a larger instance type", who, has)
}

// Error implements error, naming the field at fault in an Instance.
func (e *TooLargeError) Error() string {
	c := e.Last()
	return fmt.Sprintf("%s: spec.runtime.sandbox.containers[%d].resources.%s.%s: %s", ErrUnsizable, c.Container, c.Field, e.Resource, e.Detail())
}

// Unwrap returns ErrUnsizable.
func (e *TooLargeError) Unwrap() error { return ErrUnsizable }

// quoteAll quotes names and joins them.
func quoteAll(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return strings.Join(out, ", ")
}

// ceilDiv divides rounding up; n is never negative for quantities the API
// accepts, and a negative one rounds towards zero.
func ceilDiv(n, d int64) int64 {
	if n <= 0 {
		return n / d
	}
	return (n + d - 1) / d
}
