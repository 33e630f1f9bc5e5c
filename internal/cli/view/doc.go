// Package view turns what the API reports about a Workload, its
// WorkloadDeployments and its Instances into what a user reads: an
// Instance's status in words ("Pending (quota exceeded)", "Failed (image
// unavailable)"), per-city rollout progress ("DFW 2/2 ready · LHR 1/2
// starting"), the health of a workload, terminal failures, and the next
// step for every blocking reason. It is pure: commands fetch, view
// decides, printers render.
package view
