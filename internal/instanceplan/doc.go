// Package instanceplan is the pure instance-control planner of a
// WorkloadDeployment: given the desired replicas, the ordering policy, the
// rollout budget, the desired template hash and the Instances that exist, it
// returns the intents that move the Instances one step towards the desired
// state (create this ordinal, delete that Instance and why, patch these
// labels). It makes no client calls; the WorkloadDeployment controller
// applies the intents and calls it again when anything changes.
//
// The rules, in the order they are applied:
//
//   - Slot identity comes only from the compute.datumapis.com/instance-index
//     label. Names are compared with the name a slot would get, never parsed.
//   - Label back-fill: every surviving Instance gets the linking labels it
//     lacks as a metadata-only patch. Patches never count as rollout steps.
//   - Strays are removed first: Instances with no, an invalid or a duplicate
//     instance-index, with an ordinal at or above the desired replicas, or
//     holding the name of another slot. Under OrderedReady, out-of-range
//     Instances go one at a time in descending ordinal (scale down), and
//     nothing else happens until every stray is gone.
//   - Creates: Parallel creates every missing slot at once; OrderedReady
//     creates the lowest missing slot only when every lower slot is Ready.
//   - Template drift rolls by delete and recreate (the next pass creates the
//     slot again from the new template), newest ordinal first, while fewer
//     than maxUnavailable (default 1) desired slots are unavailable. An
//     outdated Instance that is not Ready is replaced without using the
//     budget: deleting it costs no availability, and waiting for it would
//     wedge a rollout that fixes a broken template.
//
// Every list the planner returns is sorted with a strict order, so equal
// inputs always give equal plans.
package instanceplan
