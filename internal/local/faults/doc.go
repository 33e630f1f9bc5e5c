// Package faults holds the local platform's network fault injection: the
// link proxy every connection across a city's border goes through (Proxy,
// served in-process or by the hidden `compute-local link-proxy` command
// through RunLinkProxy), and the client of its control endpoint (Client),
// which partitions a city — its links hang or refuse — and heals it.
//
// It knows nothing of the platform's state: internal/local/platform plans
// the links (LinkRecord), starts the proxy and records its control URL, and
// `compute-local partition|heal` and the e2e harness reach it through that
// URL.
package faults
