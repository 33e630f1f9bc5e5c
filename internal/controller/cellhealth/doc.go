// Package cellhealth decides whether compute can hear from the cell of a
// city, so that a city nobody has heard from is reported as stale instead of
// healthy (SPEC section 10, docs/faults.md).
//
// The signal has two parts, both read in the federation plane (the hub):
//
//   - Each cell's compute-manager renews a heartbeat Lease named after the
//     cell (its Karmada Cluster name) in namespace compute-system of the hub,
//     every DefaultInterval, with a duration of DefaultLeaseDuration —
//     kubelet's node-lease pattern. The Lease travels the same path as the
//     cell's Instance write-back (cell → hub), so a Lease that is not renewed
//     in time means the cell's reports are not arriving.
//   - Karmada's Cluster Ready condition: Karmada's own verdict on whether it
//     can reach the cell (hub → cell, the path of spec and of the status
//     Karmada collects). Karmada needs its failure threshold plus, when the
//     network swallows packets, its 32 s client timeout to decide, so the
//     Lease is the fast signal and the Cluster the backstop (a cell whose
//     compute-manager still renews but whose apiserver is down).
//
// A city is unreachable while any of its clusters is: its Lease expired, or
// Karmada reports it not Ready. Tracker (management role) keeps that verdict
// per city and tells the federator when it changes; Heartbeat (cell role)
// renews the Lease.
package cellhealth
