//go:build !linux

package platform

// The local platform runs only on Linux: its real nodes are containerd, runc
// and the kubelet, which need Linux namespaces, cgroups and mounts, and it
// manages its processes through Linux-only calls (a parent-death signal,
// /proc, flock, unmount). Every other file of this package is built only on
// Linux; elsewhere the build stops here, with this message.
const _ int = "the local platform runs only on Linux: see docs/local-platform.md"
