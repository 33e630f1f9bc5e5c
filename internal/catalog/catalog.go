// Package catalog reads compute's instance-type catalog: the cluster-scoped
// InstanceType objects an operator publishes (config/instancetypes holds
// Datum's standard set) in every plane that needs them — project planes for
// admission and Workload status, cells for quota sizing and the runtime
// providers, the Karmada hub which propagates them to the cells (the
// ClusterPropagationPolicy instance-types). A Catalog is the list a caller
// already read, so the rules here (names, aliases, lifecycle messages) are
// pure and shared by the webhook, the controllers, the providers and the
// CLI.
package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// DefaultInstanceType is the instance type the mutating webhook stamps on a
// template that names none (Datum's baseline type).
const DefaultInstanceType = "datumcloud-d1-standard-2"

// LegacyD1Standard2 is how DefaultInstanceType was spelled before instance
// type names became object names. Workloads stored with it keep it — rewriting
// their templates would roll every Instance — so it stays a deprecated alias.
const LegacyD1Standard2 = "datumcloud/d1-standard-2"

// aliases maps retired spellings to the InstanceType that replaced them.
var aliases = map[string]string{
	LegacyD1Standard2:           DefaultInstanceType,
	"datumcloud/d1-standard-4":  "datumcloud-d1-standard-4",
	"datumcloud/d1-standard-8":  "datumcloud-d1-standard-8",
	"datumcloud/d1-standard-16": "datumcloud-d1-standard-16",
}

// Canonical returns the InstanceType name a spelling refers to: a retired
// spelling maps to its replacement, any other name to itself.
func Canonical(name string) string {
	if c, ok := aliases[name]; ok {
		return c
	}
	return name
}

// IsAlias reports whether name is a retired spelling.
func IsAlias(name string) bool {
	_, ok := aliases[name]
	return ok
}

// AliasesOf returns the retired spellings that refer to name, sorted.
func AliasesOf(name string) []string {
	var out []string
	for alias, c := range aliases {
		if c == name {
			out = append(out, alias)
		}
	}
	slices.Sort(out)
	return out
}

// Catalog is a set of InstanceTypes a caller read.
type Catalog []computev1alpha.InstanceType

// Load lists the InstanceTypes r serves. A plane without the InstanceType
// API (its CRD not installed yet, during an upgrade) serves none: an empty
// catalog, not an error, so admission keeps admitting the updates of the
// Workloads it has and running Instances keep running.
func Load(ctx context.Context, r client.Reader) (Catalog, error) {
	var list computev1alpha.InstanceTypeList
	if err := r.List(ctx, &list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed to list InstanceTypes: %w", err)
	}
	return Catalog(list.Items), nil
}

// Find returns the InstanceType name refers to (a retired spelling finds its
// replacement), nil when the catalog has none.
func (c Catalog) Find(name string) *computev1alpha.InstanceType {
	name = Canonical(name)
	for i := range c {
		if c[i].Name == name {
			return &c[i]
		}
	}
	return nil
}

// Names returns the names of the types a new Workload may name (every type
// but the Disabled ones), sorted.
func (c Catalog) Names() []string {
	var out []string
	for i := range c {
		if c[i].Spec.Lifecycle.Phase != computev1alpha.InstanceTypePhaseDisabled {
			out = append(out, c[i].Name)
		}
	}
	slices.Sort(out)
	return out
}

// Sorted returns the types sorted by name.
func (c Catalog) Sorted() Catalog {
	out := slices.Clone(c)
	slices.SortFunc(out, func(a, b computev1alpha.InstanceType) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Size is the vCPU and memory of an InstanceType.
func Size(t *computev1alpha.InstanceType) (cpu, memory resource.Quantity) {
	return t.Spec.Resources.CPU.DeepCopy(), t.Spec.Resources.Memory.DeepCopy()
}

// DeprecatedMessage says that name is deprecated and where to go: the
// message of the InstanceTypeDeprecated condition and of the admission
// warning.
func DeprecatedMessage(name, replacement string) string {
	if replacement == "" {
		return fmt.Sprintf("InstanceType '%s' is deprecated.", name)
	}
	return fmt.Sprintf("InstanceType '%s' is deprecated; please migrate to '%s'.", name, replacement)
}

// DisabledMessage says that name is disabled and where to go: the message
// admission refuses a new Workload with, and of the InstanceTypeDisabled
// condition.
func DisabledMessage(name, replacement string) string {
	if replacement == "" {
		return fmt.Sprintf("InstanceType '%s' is disabled and lists no replacement; please update your workload to another instance type", name)
	}
	return fmt.Sprintf("InstanceType '%s' is disabled; please update your workload to '%s'.", name, replacement)
}
