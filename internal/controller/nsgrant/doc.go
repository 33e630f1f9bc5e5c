// Package nsgrant grants one ClusterRole to one user in every federation
// namespace of a cluster, one RoleBinding per namespace, and nowhere else.
// Two identities hold rights this way, so that neither reaches a namespace
// compute does not run in:
//
//   - the debug API's relay in a cell (DebugRelay). `datumctl compute logs`
//     and `exec` reach a Pod through Karmada's cluster proxy, which
//     impersonates the relay's hub identity in the cell (docs/debugging.md).
//     That user holds nothing in the cell but what the ClusterRole
//     compute-debug-relay grants (get pods/log, create and get pods/exec),
//     in the federation namespaces: the copies Karmada makes in every cell
//     of the hub's ns-<uid> namespaces, where compute's Pods run.
//     kube-system, compute-system and every other namespace of the cell
//     stay out of its reach, by the cell's own API server. The cell's
//     compute-manager keeps these bindings (the user is --debug-relay-user).
//   - the management role in the hub (Companions). It writes the companions
//     of referenced data (Secrets and ConfigMaps) into the ns-<uid>
//     namespaces it creates; the ClusterRole compute-federation-companions
//     grants that, bound there to the management role's own hub user (read
//     from the hub with a SelfSubjectReview), so the hub's other Secrets —
//     Karmada's credentials of every cell in karmada-cluster, the cells'
//     ServiceAccount tokens — stay out of its reach.
//
// The Reconciler keeps the grant's RoleBinding in every federation
// namespace: it creates it when missing and puts its subject back in step
// when it changed. A federation namespace is recognised by what only the
// hub gives it and Karmada carries over: a name ns-<uid> and the upstream
// labels naming the project cluster (cluster-<name>) and namespace it stands
// for (IsFederationNamespace). It never deletes a RoleBinding: one compute
// did not create (not labelled app.kubernetes.io/managed-by=compute) is
// left alone, and the bindings go with their namespace.
//
// Granting a role needs `bind` on exactly that ClusterRole
// (config/rbac/debug-relay-bindings, config/rbac/federation): the identity
// does not hold the role's rights itself. A ValidatingAdmissionPolicy in
// each cluster (compute-debug-relay-bindings in the cells,
// compute-federation-companions in the hub) holds every binding of the role
// to what this controller writes — named after the role, binding it to the
// one user, labelled as compute's, in a federation namespace, by the same
// test as IsFederationNamespace — so even a stolen manager token cannot
// bind the role into kube-system or karmada-cluster.
//
// It reads through a cache of its own (NewCache): the metadata of the
// namespaces carrying the upstream labels, and the RoleBindings named after
// the role — never every RoleBinding of the cluster.
package nsgrant
