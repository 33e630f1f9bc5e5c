// Package names derives every generated name and hash compute uses: object
// names that must be deterministic and collision-free, the instance template
// hash, and the upstream cluster label value. Pure functions only.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// MaxNameLength is the longest name compute generates for objects that are
// also used as label values.
const MaxNameLength = 63

// hashLength is the number of hex characters of the identity hash in a
// WorkloadDeployment name: 32 bits, so a collision needs ~65k deployments of
// one Workload name in one namespace.
const hashLength = 8

// WorkloadDeploymentName returns the name of the WorkloadDeployment of a
// workload placement in a city, as compute named them before placement by
// Location: `<workload>-<city>-<hash>`, at most 63 characters. The hash
// covers the workload UID, placement and city as separate fields, so names
// that collide when naively joined ("app-a"/"b" vs "app"/"a-b") and
// workloads recreated under the same name get different names. Existing
// deployments keep these names (placement adopts them for the Location
// serving their city); new ones are named by LocationDeploymentName.
func WorkloadDeploymentName(workload string, uid types.UID, placement, city string) string {
	return deploymentName(workload, city, string(uid), placement, city)
}

// LocationDeploymentName returns the name of the WorkloadDeployment of a
// workload placement in the Location locationNamespace/location of city:
// `<workload>-<city>-<hash>` like WorkloadDeploymentName, the hash covering
// the workload UID, placement and Location, so two Locations of one city
// get two names, and none is the name of a city's deployment from before
// Locations (the Location's namespace is never empty).
func LocationDeploymentName(workload string, uid types.UID, placement, city, locationNamespace, location string) string {
	return deploymentName(workload, city, string(uid), placement, locationNamespace, location)
}

// FallbackDeploymentName returns the name of the WorkloadDeployment that
// runs, in a fallback Location, the replicas of the Workload's deployment
// named forDeployment while that one's cell is unreachable: unique per
// (workload UID, placement, fallback Location, deployment replaced).
func FallbackDeploymentName(workload string, uid types.UID, placement, city, locationNamespace, location, forDeployment string) string {
	return deploymentName(workload, city, string(uid), placement, locationNamespace, location, "failover-for", forDeployment)
}

// deploymentName joins workload, the lower-cased city and the hash of
// identity, keeping the whole within MaxNameLength.
func deploymentName(workload, city string, identity ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(identity, "\x00")))
	suffix := "-" + strings.ToLower(city) + "-" + hex.EncodeToString(sum[:])[:hashLength]
	prefix := workload
	if max := MaxNameLength - len(suffix); len(prefix) > max {
		prefix = strings.TrimRight(prefix[:max], "-.")
	}
	return prefix + suffix
}

// InstanceName returns the name of the Instance in a slot of a
// WorkloadDeployment. Names are for people; the slot of an existing Instance
// is read only from its instance-index label.
func InstanceName(deployment string, ordinal int) string {
	return deployment + "-" + strconv.Itoa(ordinal)
}

// templateHashLength is the number of hex characters of a template hash:
// 64 bits of SHA-256, so finding two templates with the same hash takes
// about 2^32 tries even for someone who crafts them.
const templateHashLength = 16

// TemplateHash returns a short, stable hash of an instance template: the
// first 64 bits of the SHA-256 of its canonical form, in hex. Any change to
// the template, including a new restartedAt annotation, changes it, except
// spelling out a network interface's schema defaults (name eth0,
// ipFamilies [IPv6], reclaimPolicy Delete): the API server writes those on
// every interface it reads, templates stored before the fields existed
// included, and such a template must keep its hash so its Instances are
// not replaced.
//
// It decides identity (which Instances are up to date, which revision a
// template is, whether referenced data was resolved for it), never an
// authorization: admission compares templates by value.
func TemplateHash(tpl *computev1alpha.InstanceTemplateSpec) string {
	return HashesOf(tpl).Current
}

// TemplateHashes are the two spellings of one template's hash: Current,
// the one compute writes, and the 32-bit FNV-1a one releases before SHA-256
// wrote, still carried by the Instances, Pods, revisions and annotations they
// created. Reading an object, compute takes either as naming the template,
// so an upgrade replaces nothing; it writes only Current.
type TemplateHashes struct {
	// Current is TemplateHash.
	Current string
	// legacy is the earlier spelling.
	legacy string
}

// HashesOf returns both spellings of tpl's hash.
func HashesOf(tpl *computev1alpha.InstanceTemplateSpec) TemplateHashes {
	// encoding/json sorts map keys, so equal templates encode equally.
	b, err := json.Marshal(CanonicalTemplate(tpl))
	if err != nil {
		// A template is plain data; Marshal cannot fail on it.
		panic(fmt.Sprintf("names: cannot encode instance template: %v", err))
	}
	sum := sha256.Sum256(b)
	legacy := fnv.New32a()
	_, _ = legacy.Write(b)
	return TemplateHashes{
		Current: hex.EncodeToString(sum[:])[:templateHashLength],
		legacy:  rand.SafeEncodeString(strconv.FormatUint(uint64(legacy.Sum32()), 10)),
	}
}

// Names reports whether a stored hash names this template, in either
// spelling. An empty hash names nothing.
func (h TemplateHashes) Names(stored string) bool {
	return stored != "" && (stored == h.Current || stored == h.legacy)
}

// Legacy is the earlier spelling: what a release before SHA-256 wrote for
// this template (tests and the upgrade path build such objects with it).
func (h TemplateHashes) Legacy() string { return h.legacy }

// Keep returns stored when it names this template, in either spelling,
// else Current: what to write where stored was written before, so that an
// object whose template did not change is not rewritten in the new
// spelling (a rewrite is a write every reader of it sees).
func (h TemplateHashes) Keep(stored string) string {
	if h.Names(stored) {
		return stored
	}
	return h.Current
}

// Normalize returns Current when stored names this template, else stored:
// compare hashes read from objects only after normalizing them.
func (h TemplateHashes) Normalize(stored string) string {
	if h.Names(stored) {
		return h.Current
	}
	return stored
}

// CanonicalTemplate returns the template as TemplateHash sees it: tpl
// itself, or a copy whose network interfaces leave out the values equal to
// their schema defaults. Two templates that differ only in spelling those
// out (one stored before the fields existed, one read back with them) are
// equal in this form; compare templates in it, never as read.
func CanonicalTemplate(tpl *computev1alpha.InstanceTemplateSpec) *computev1alpha.InstanceTemplateSpec {
	defaulted := func(nic *computev1alpha.InstanceNetworkInterface) bool {
		return nic.Name == computev1alpha.DefaultInterfaceName ||
			nic.ReclaimPolicy == computev1alpha.DefaultReclaimPolicy ||
			(len(nic.IPFamilies) == 1 && nic.IPFamilies[0] == computev1alpha.DefaultIPFamily)
	}
	if !slices.ContainsFunc(tpl.Spec.NetworkInterfaces, func(nic computev1alpha.InstanceNetworkInterface) bool { return defaulted(&nic) }) {
		return tpl
	}
	out := tpl.DeepCopy()
	for i := range out.Spec.NetworkInterfaces {
		nic := &out.Spec.NetworkInterfaces[i]
		if nic.Name == computev1alpha.DefaultInterfaceName {
			nic.Name = ""
		}
		if nic.ReclaimPolicy == computev1alpha.DefaultReclaimPolicy {
			nic.ReclaimPolicy = ""
		}
		if len(nic.IPFamilies) == 1 && nic.IPFamilies[0] == computev1alpha.DefaultIPFamily {
			nic.IPFamilies = nil
		}
	}
	return out
}

// UpstreamClusterName returns the value of the upstream-cluster-name label for
// a project cluster: "cluster-" + the cluster name with "/" replaced by "_".
func UpstreamClusterName(cluster string) string {
	return "cluster-" + strings.ReplaceAll(cluster, "/", "_")
}

// ClusterFromUpstreamName inverts UpstreamClusterName. It reports false for a
// value that does not carry the "cluster-" prefix.
func ClusterFromUpstreamName(label string) (string, bool) {
	rest, ok := strings.CutPrefix(label, "cluster-")
	if !ok || rest == "" {
		return "", false
	}
	return strings.ReplaceAll(rest, "_", "/"), true
}

// FederationNamespace returns the federation-plane namespace that holds the
// copies of a project namespace: unique per project namespace because it is
// derived from the namespace UID.
func FederationNamespace(projectNamespaceUID types.UID) string {
	return "ns-" + string(projectNamespaceUID)
}

// ResourceClaimName returns the quota claim name of an Instance.
func ResourceClaimName(instance string) string {
	return "instance-" + instance
}

// NetworkBindingName returns the name of the NetworkBinding of an
// Instance's network interface (NetworkingIntegration): `<instance>-net<i>`.
func NetworkBindingName(instance string, iface int) string {
	return instance + "-net" + strconv.Itoa(iface)
}

// NetworkContextName returns the name of a network's NetworkContext (and of
// its SubnetClaim and Subnet) in a city: `<network>-<city>`, the network's
// namespace first when the network lives in another namespace than the
// binding asking for it. Names longer than MaxNameLength are cut and
// end in a hash of the whole, so they stay distinct.
func NetworkContextName(networkNamespace, network, city string) string {
	parts := []string{network, strings.ToLower(city)}
	if networkNamespace != "" {
		parts = append([]string{networkNamespace}, parts...)
	}
	name := strings.Join(parts, "-")
	if len(name) <= MaxNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	suffix := "-" + hex.EncodeToString(sum[:])[:hashLength]
	return strings.TrimRight(name[:MaxNameLength-len(suffix)], "-.") + suffix
}

// GrantGrace is how long after a federation namespace is made a write its
// grant should allow may still be refused: the controller binds the role
// (internal/controller/nsgrant) within moments of the namespace appearing, and the API server's
// authorizer sees the binding moments later. A writer waits through such a
// refusal quietly (NotGrantedYet) and reports one after it.
const GrantGrace = 15 * time.Second

// NotGrantedYet reports whether err is a refusal of a write into a
// federation namespace made at created that its grant's binding, not yet
// made or not yet seen by the API server, will allow: a 403 within
// GrantGrace of the namespace's creation.
func NotGrantedYet(err error, created, now time.Time) bool {
	return apierrors.IsForbidden(err) && now.Sub(created) < GrantGrace
}
