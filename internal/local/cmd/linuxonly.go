//go:build !linux

package cmd

// compute-local runs only on Linux: see cmd/compute-local/main_other.go for
// why. Every other file of this package is built only on Linux; elsewhere
// the build stops here, with this message.
const _ int = "compute-local runs only on Linux: see docs/local-platform.md"
