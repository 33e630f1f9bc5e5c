// Package hubclients fills in the clients of the federation plane (the
// hub) that a controller working on it was not given, the same way for
// every such controller.
package hubclients

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Default sets *hub, when nil, to the federation plane's cached client and
// *reader, when nil, to its uncached API reader; a nil plane sets neither.
func Default(hub *client.Client, reader *client.Reader, plane cluster.Cluster) {
	if plane == nil {
		return
	}
	if *hub == nil {
		*hub = plane.GetClient()
	}
	if *reader == nil {
		*reader = plane.GetAPIReader()
	}
}
