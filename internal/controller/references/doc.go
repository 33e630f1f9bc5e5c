// Package references checks, in the project plane, that the Secrets and
// ConfigMaps an instance template references exist, and records the ones
// that do not on each WorkloadDeployment of the Workload.
//
// Cells cannot read project Secrets, and no Secret content may leave the
// project plane. The Reconciler therefore watches Secrets and ConfigMaps by
// metadata only (it never reads their data) and writes the names of the
// missing, non-optional objects into the MissingReferencesAnnotation of the
// project WorkloadDeployments. The annotation travels with the deployment
// through the federation plane to the cell, where the runtime provider fails
// the Instances with ConfigurationError naming what is missing. Creating the
// object clears the annotation and the provider runs the instances.
//
// Only object existence is checked: whether a Secret holds a key is content,
// and stays with the provider that mounts it.
package references
