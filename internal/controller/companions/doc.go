// Package companions is the referenced-data resolver of the management
// plane (Datum's ReferencedDataController, RFC configmap-secret-mounts).
// For each project namespace it reads the ConfigMaps and Secrets the
// templates of its WorkloadDeployments reference (internal/referenceddata)
// and writes one "companion" per object into the namespace's federation
// namespace: a ConfigMap stays a ConfigMap and a Secret a Secret (type
// kept), named configmap.<name> or secret.<name>, labelled
// compute.datumapis.com/referenced-data=true and annotated with the hash of
// its content. Then it records on each WorkloadDeployment what its cell must
// hold (the expected-referenced-data and referenced-data-hashes
// annotations, or referenced-data-error) and the ReferencedDataReady
// condition. Karmada carries the companions to exactly the cells that run a
// WorkloadDeployment naming them: compute's ResourceInterpreterCustomization
// declares them as the WorkloadDeployment's dependencies and the city
// PropagationPolicies propagate dependencies (config/federation).
//
// A companion is shared by every WorkloadDeployment of the namespace that
// references its object: the set of companions a namespace needs is
// recomputed from all of them on every pass (counting references this way
// cannot drift across restarts), and a companion nobody needs is deleted.
// A WorkloadDeployment that references data carries the finalizer
// compute.datumapis.com/referenced-data-controller, released once the
// companions only it needed are gone.
//
// Reads are scoped: Secrets and ConfigMaps are watched by metadata only
// (the informer never holds their data); content is read with a direct GET
// of exactly the objects referenced. A source that disappears while in use
// turns the condition SourceNotFound and new Instances wait; its companion
// is kept with its last content so running Instances keep running.
package companions
