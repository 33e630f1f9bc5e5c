// Package debugrelay grants the debug API's relay its rights in a cell, one
// federation namespace at a time.
//
// `datumctl compute logs` and `exec` reach a Pod through Karmada's cluster
// proxy, which impersonates the relay's hub identity in the cell
// (docs/debugging.md). That user holds nothing in the cell but what the
// ClusterRole compute-debug-relay grants (get pods/log, create and get
// pods/exec), and only where a RoleBinding compute-debug-relay binds it:
// in the federation namespaces, the copies Karmada makes in every cell of
// the hub's ns-<uid> namespaces, where compute's Pods run. kube-system,
// compute-system and every other namespace of the cell stay out of its
// reach, by the cell's own API server.
//
// The Reconciler keeps that RoleBinding in every federation namespace of
// the cell: it creates it when missing and puts its subject back in step
// when it changed (the user is --debug-relay-user). A federation namespace
// is recognised by what only the hub gives it and Karmada carries over: a
// name ns-<uid> and the upstream labels naming the project cluster
// (cluster-<name>) and namespace it stands for (IsFederationNamespace). It
// never deletes a RoleBinding: one compute did not create (not labelled
// app.kubernetes.io/managed-by=compute) is left alone, and the bindings go
// with their namespace when Karmada removes it.
//
// Granting the role needs `bind` on exactly that ClusterRole
// (config/rbac/debug-relay-bindings): the manager does not hold pods/log or
// pods/exec itself. The ValidatingAdmissionPolicy
// compute-debug-relay-bindings (config/rbac/debug-relay-bindings/policy.yaml)
// holds compute's identities in the cell to the bindings this controller
// writes — named compute-debug-relay, binding that role to the relay's
// user, labelled as compute's, in a federation namespace, by the same test
// as IsFederationNamespace — so even a stolen manager token cannot bind the
// relay role into kube-system, nor bind any other role the manager's own
// rights would let it.
//
// It reads through a cache of its own (NewCache): the metadata of the
// namespaces carrying the upstream labels, and the RoleBindings named
// compute-debug-relay — never every RoleBinding of the cell.
package debugrelay
