// Package view reads what the management plane decided about a Workload
// and puts it into words: one status reader (Status / Read: message, done
// and the failures the server reports, from the Workload alone, kubectl's
// rollout-status shape) and renderers — an Instance's status in words
// ("Pending (quota exceeded)", "Failed (image unavailable)") and per-city
// progress ("DFW 2/2 ready · LHR 1/2 starting"). It decides nothing: every
// verdict and every word for a reason comes from the Workload's status and
// the reason registry (internal/status). It is pure: commands fetch, view
// reads, printers render.
package view
