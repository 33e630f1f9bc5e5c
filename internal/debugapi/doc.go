// Package debugapi is compute's debug API: an aggregated API
// (debug.compute.datumapis.com/v1alpha) a project plane's kube-apiserver
// proxies to, serving an Instance's log and exec subresources:
//
//	GET  /apis/debug.compute.datumapis.com/v1alpha/namespaces/NS/instances/NAME/log?follow=…&tailLines=…
//	POST /apis/debug.compute.datumapis.com/v1alpha/namespaces/NS/instances/NAME/exec?command=…&stdin=…  (an upgrade)
//
// The tenant never holds a hub or cell credential. A request arrives from
// the project plane's aggregator, which authenticates the tenant and
// forwards the identity in the X-Remote-User and X-Remote-Group headers on
// a connection authenticated with its front-proxy client certificate; the
// server trusts those headers only on such a connection (the requestheader
// mechanism of k8s.io/apiserver). The tenant is then authorized with a
// SubjectAccessReview in the same project plane for `get instances/log`
// or `create instances/exec` in group compute.datumapis.com, so project
// RBAC (view reads logs, edit also execs) decides, not this server.
//
// The project Instance (a projection) names its city (CityCodeLabel), its
// Workload and its federation namespace (FederationNamespaceAnnotation);
// its Pod in the cell has the Instance's name in that namespace. The
// server refuses at once, naming the city, when the Workload's status says
// the city's cell is not heard from (status.cities[].stale), and otherwise
// relays through Karmada's cluster proxy
// (/apis/cluster.karmada.io/v1alpha1/clusters/CLUSTER/proxy/api/v1/namespaces/NS/pods/NAME/log),
// bounding the wait for the first response with a short timeout so an
// unreachable cell is an error naming the city, never a hang. Karmada
// impersonates the relay's hub identity in the cell, where RBAC grants it
// only pods/log and pods/exec (see docs/debugging.md).
package debugapi
