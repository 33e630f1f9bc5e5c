// Package cityrollout plans how a Workload's template change travels between
// its cities: which revision each city's WorkloadDeployment runs, and
// whether the rollout is progressing, paused, waiting for approval, halted
// or complete. It is pure: the WorkloadReconciler observes each city (the
// revision its deployment carries, whether the cell reports it ready, since
// when, and any failure its Instances report), calls Make, and writes the
// revisions the plan gives.
//
// # Waves
//
// The cities are ordered into waves by the strategy: AllAtOnce is one wave;
// Waves takes the listed waves in order (cities no wave names form a last
// wave); Canary puts the canary city first and the others, sorted by city
// code, in waves of at most waveSize cities. A city code names a city in
// every placement: a placement × city is one "city" of the plan.
//
// # Rules
//
//   - A city only ever runs its own revision, the target revision (the
//     Workload's current template), or — rolled back after a halt — the
//     revision it ran before. A city never goes back to an intermediate
//     revision: when a new change arrives mid-rollout, the rollout restarts
//     at wave 1 with the newest revision, and cities of later waves keep
//     whatever they run until their wave.
//   - The active wave is the first whose cities do not all run the target
//     and have all been ready at it for the soak time. Only the active
//     wave's cities get the target, and at most maxUnavailableCities
//     cities are updating (have the target, not all replicas ready) at a
//     time.
//   - A city at the target whose Instances report a halting failure
//     (ImageUnavailable, InstanceCrashing, ConfigurationError), or that
//     is not ready by its progress deadline, halts the rollout: no further
//     city gets the target. With rollback, the halted wave's cities return
//     to their previous revision; the rolled-back record keeps the rollout
//     halted until the template changes again.
//   - Paused, or a wave that waits for manual approval, stops new cities
//     from getting the target; cities already updating finish.
//   - A city without a deployment yet gets the target when its wave has
//     been reached, otherwise the base revision (what most cities run), so
//     a city added mid-rollout does not skip the waves. On a Workload's
//     first deployment every city gets the target at once.
package cityrollout
