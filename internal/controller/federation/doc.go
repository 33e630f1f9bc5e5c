// Package federation is the WorkloadDeploymentFederator of the management
// plane and the PropagationPolicy controller it relies on in the federation
// plane (the Karmada apiserver, "the hub").
//
// The federator runs on the management role's multicluster manager: every
// request carries the name of the project cluster it came from, and a
// request without one is dropped. For each project WorkloadDeployment it:
//
//  1. holds the compute.datumapis.com/federation finalizer, added before
//     anything is written to the hub, so deleting the WorkloadDeployment
//     always deletes its hub copy;
//  2. maps the project namespace to a hub namespace unique per project
//     namespace, ns-<uid of the project namespace> (names.FederationNamespace),
//     labelled with the upstream cluster name and namespace, and records it
//     on the project WorkloadDeployment (annotation
//     compute.datumapis.com/federation-namespace). The UID is read live
//     from the project apiserver, never from a cache (a namespace made
//     again under the same name must not map to the old hub namespace);
//     the record, which a user can write, is trusted only where a hub copy
//     carrying the deployment's own UID (annotation
//     compute.datumapis.com/upstream-uid, written only under a live-read
//     mapping) proves it, which keeps a restarted manager's resync of
//     unchanged deployments off the project apiserver;
//  3. ensures the PropagationPolicy of the deployment's city in that hub
//     namespace (CityPolicy) and copies the WorkloadDeployment's spec and
//     labels there, labelled with the upstream cluster name and namespace
//     and the city routing label, and annotated with the project generation
//     it was copied from and the project deployment's UID;
//  4. mirrors the hub copy's status — aggregated by Karmada through
//     compute's ResourceInterpreterCustomization — onto the project
//     WorkloadDeployment, translating the hub's observedGeneration back
//     into the project's generation, and reports the Federated condition.
//     The status is patched only when it differs;
//  5. asks Karmada to collect the hub copy's status again when it has
//     lagged the copy's generation for StatusResyncAfter (Karmada can drop
//     a member's status after an etcd loss and never look again): it
//     writes compute.datumapis.com/status-resync-requested on the copy,
//     rate-limited, never while the city's cell is not heard from (see
//     docs/faults.md).
//
// Status arrives event-driven: the federator watches the hub copies and
// maps each event back to the project request through the copy's upstream
// labels, preserving the project cluster name (RequestForHubDeployment).
//
// Deletion: the finalizer is released only once the hub copy is gone or
// its deletion was accepted. A hub that cannot be reached keeps the
// WorkloadDeployment visibly stuck with Federated=False and the reason,
// retried with backoff — never bypassed, and released as soon as the hub
// answers.
//
// The PolicyReconciler keeps, per hub namespace and city, one
// PropagationPolicy while any hub WorkloadDeployment of that city exists,
// and deletes it with the last one. It decides deletion from a live list
// so a stale cache never removes a policy a new copy needs.
package federation
