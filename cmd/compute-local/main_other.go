//go:build !linux

package main

// compute-local runs only on Linux: its real nodes are containerd, runc and
// the kubelet, which need Linux namespaces, cgroups and mounts, and the
// platform manages its processes through Linux-only calls (a parent-death
// signal, /proc, flock). Building it for another system stops here, with
// this message, instead of deep inside the platform; the datumctl-compute
// plugin is the cross-platform binary.
const _ int = "compute-local runs only on Linux: see docs/local-platform.md"
