package quotaservice

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Defaults of Options.
const (
	// DefaultBucketNamespace holds the AllowanceBuckets, as in Milo.
	DefaultBucketNamespace = "milo-system"
	// DefaultGrantNamespace holds the default grant: the namespace compute's
	// claims live in on the local platform.
	DefaultGrantNamespace = "default"
	// DefaultGrantName names the default grant of a project.
	DefaultGrantName = "compute-default"
	// DefaultHoldGrace is how long unexplained bucket allocations are held:
	// longer than a leader-election lease (15 s), so a previous leader's
	// in-flight grant becomes visible before its capacity is reused.
	DefaultHoldGrace = 30 * time.Second
	// DefaultMaxConcurrentConsumers is how many consumers are evaluated at
	// once (each consumer is always evaluated by one loop at a time).
	DefaultMaxConcurrentConsumers = 4
	// DefaultMaxClaimsPerSource caps the ResourceClaims one cell has
	// outstanding in a quota plane: above the Instances one cell runs for
	// one project in compute's benchmarks (about 2,000), below what would
	// let one cell fill the service's memory (256 MiB holds a few thousand
	// Instances' claims, docs/install.md).
	DefaultMaxClaimsPerSource = 5000
)

// Finalizer is the finalizer earlier versions of the service put on every
// claim they granted. The service no longer adds it (a grant is one status
// write); when a claim carrying it is deleted, the service releases the
// allocation in the buckets and then removes it, so such claims never wedge.
const Finalizer = "quota.miloapis.com/allocation"

// Options configures the quota service of one project plane.
type Options struct {
	// Project is the project this plane belongs to: its default grant is
	// made out to resourcemanager.miloapis.com/Project <Project>. Empty
	// means no default grant.
	Project string
	// DefaultGrant is the allowance of the default grant in base units, by
	// resource type; empty means no default grant. It is created when the
	// service first sees the project's plane and never changed afterwards,
	// so a grant someone raised stays raised.
	DefaultGrant map[string]int64
	// GrantName names the default grant; DefaultGrantName when empty.
	GrantName string
	// GrantNamespace holds the default grant (the claim namespace);
	// DefaultGrantNamespace when empty. It is created if missing.
	GrantNamespace string
	// BucketNamespace holds the AllowanceBuckets; DefaultBucketNamespace
	// when empty. It is created if missing.
	BucketNamespace string
	// SkipRegistrations leaves the compute ResourceRegistrations to someone
	// else; by default the service creates them when they are missing.
	SkipRegistrations bool
	// HoldGrace is how long bucket allocations no granted claim explains
	// are held before they are released; DefaultHoldGrace when zero.
	HoldGrace time.Duration
	// MaxConcurrentConsumers is how many consumers are evaluated in
	// parallel; DefaultMaxConcurrentConsumers when zero.
	MaxConcurrentConsumers int
	// MaxClaimsPerSource is how many claims one cell (the claims labelled
	// compute.datumapis.com/source-cluster with its name) may have
	// outstanding in the plane; later ones are refused until earlier ones
	// go. DefaultMaxClaimsPerSource when zero.
	MaxClaimsPerSource int
	// Clock stamps statuses and times holds; the real clock when nil.
	Clock clock.PassiveClock
}

// withDefaults returns o with the zero values filled in.
func (o Options) withDefaults() Options {
	if o.GrantName == "" {
		o.GrantName = DefaultGrantName
	}
	if o.GrantNamespace == "" {
		o.GrantNamespace = DefaultGrantNamespace
	}
	if o.BucketNamespace == "" {
		o.BucketNamespace = DefaultBucketNamespace
	}
	if o.HoldGrace <= 0 {
		o.HoldGrace = DefaultHoldGrace
	}
	if o.MaxConcurrentConsumers <= 0 {
		o.MaxConcurrentConsumers = DefaultMaxConcurrentConsumers
	}
	if o.MaxClaimsPerSource == 0 {
		o.MaxClaimsPerSource = DefaultMaxClaimsPerSource
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// Validate reports every problem of the options at once.
func (o Options) Validate() error {
	var errs []error
	if o.Project != "" {
		if msgs := validation.IsDNS1123Label(o.Project); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("project %q is not a valid project name: %s", o.Project, strings.Join(msgs, "; ")))
		}
	}
	for _, ns := range []string{o.GrantNamespace, o.BucketNamespace} {
		if ns == "" {
			continue
		}
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("namespace %q is not valid: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	for _, t := range slices.Sorted(maps.Keys(o.DefaultGrant)) {
		if o.DefaultGrant[t] < 0 {
			errs = append(errs, fmt.Errorf("default grant of %s must not be negative, got %d", t, o.DefaultGrant[t]))
		}
	}
	if o.MaxClaimsPerSource < 0 {
		errs = append(errs, fmt.Errorf("the ResourceClaims a cell may have outstanding (MaxClaimsPerSource, --max-claims-per-source) must be positive, got %d", o.MaxClaimsPerSource))
	}
	if len(o.DefaultGrant) > 0 && o.Project == "" {
		errs = append(errs, errors.New("a default grant needs the project it is for"))
	}
	return errors.Join(errs...)
}

// ComputeGrant returns a default grant in base units from human amounts:
// instances, vCPU as a quantity ("40", "500m") and memory as a quantity
// ("80Gi").
func ComputeGrant(instances int64, vcpu, memory string) (map[string]int64, error) {
	cpu, err := resource.ParseQuantity(vcpu)
	if err != nil {
		return nil, fmt.Errorf("invalid vCPU amount %q: %w", vcpu, err)
	}
	mem, err := resource.ParseQuantity(memory)
	if err != nil {
		return nil, fmt.Errorf("invalid memory amount %q: %w", memory, err)
	}
	if instances < 0 || cpu.Sign() < 0 || mem.Sign() < 0 {
		return nil, errors.New("grant amounts must not be negative")
	}
	return map[string]int64{
		computev1alpha.ResourceTypeInstances: instances,
		computev1alpha.ResourceTypeVCPUs:     cpu.MilliValue(),
		computev1alpha.ResourceTypeMemory:    mem.Value() / (1 << 20),
	}, nil
}
