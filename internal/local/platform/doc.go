// Package platform runs compute's local platform: a complete, real control
// plane on one machine, with no Docker and no external cluster. It is what
// `compute-local up` starts (the commands are internal/local/cmd), and what
// the end-to-end tests and benchmarks start in-process through Up and
// Platform.Down.
//
// The platform is one etcd shared by every plane (each with its own etcd
// prefix) and:
//
//   - a project plane per project (kube-apiserver, kube-controller-manager
//     with the garbage collector and namespace controllers, compute's CRDs
//     and the contracts' CRDs), with a Location per city and a
//     LocationBinding per city in the project's default namespace;
//   - the federation plane, "hub": a kube-apiserver with Karmada's and
//     compute's CRDs and its own garbage collector, plus
//     karmada-aggregated-apiserver (serving clusters.cluster.karmada.io
//     through an APIService and an ExternalName Service),
//     karmada-webhook (URL-based webhook configurations), and
//     karmada-controller-manager and karmada-scheduler, started only after
//     every CRD is installed everywhere, with cluster health thresholds
//     lowered for local use; compute's WorkloadDeployment
//     ResourceInterpreterCustomization is installed;
//   - a cell plane per city ("cell-dfw", ...) with compute's CRDs and a
//     garbage collector, registered as a push-mode Karmada Cluster (a Secret
//     with a static bearer token and the CA) labelled
//     topology.datum.net/city-code, and waited on until Ready;
//   - compute-manager in the management role for every project and in the
//     cell role (with the simulated provider) for every city, when a
//     compute-manager binary can be built or found;
//   - compute-quota, built with compute-manager, against every project
//     plane (the project's registrations and default grant, and the
//     granting of its claims), with the cells reaching the project planes
//     through <state>/quota.kubeconfig (a context per project, as the
//     claims-only user compute-cell-quota) and --cell-name cell-<city>.
//
// Everything lives in a state directory: state.json (every process with pid,
// port and log), one kubeconfig per plane, logs/ (one file per component),
// pki/, etcd/ and bin/. A detached platform (the CLI) is stopped later from
// the state file alone (StopRecorded); an in-process one (tests) by
// Platform.Down, and its processes die with the test binary if it crashes.
//
// Fault controls stop, start and restart any recorded component
// (StopRecordedComponent, Platform.StopComponent, ...) and partition a city
// through the link proxy of internal/local/faults, which every connection
// across a city's border goes through.
package platform
