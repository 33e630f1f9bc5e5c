// Package wait waits for a Workload's rollout the way `kubectl rollout
// status` does: it watches the Workload alone, whose status says where each
// city stands and names the Instances that fail (the management plane's
// verdicts), reads it (view.Read / view.Status: message, done and the
// failures the server reports), renders live per-city progress, and stops
// on success, on a failure the server calls terminal (exit 1, with next
// steps), at --timeout (exit 3) or on Ctrl-C (exit 130; the rollout
// continues on the server). Follow ends the commands that start a rollout
// (restart, scale, suspend, rollout undo).
package wait
