// Package status holds the rules compute uses to summarise many objects into
// one condition: the blocking-reason priority table that decides which
// reason a WorkloadDeployment (from its Instances) or a Workload (from its
// WorkloadDeployments) reports when nothing is available. Pure functions
// only, so the cell and the management plane rank reasons identically.
package status
