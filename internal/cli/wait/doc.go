// Package wait waits for a Workload's rollout the way `kubectl rollout
// status` does: it watches the Workload, whose status says where each city
// stands, and its Instances (only to name the ones that fail), assesses
// them (view.Assess: the status function returning message, done and
// failures), renders live per-city progress, and stops on success, on a
// terminal instance failure (exit 1, with next steps), at --timeout (exit
// 3) or on Ctrl-C (exit 130; the rollout continues on the server).
package wait
