// Package clitest is the test harness of the CLI: a shared real API
// server (internal/planes) per test package, a namespace per test, a
// Factory wired to buffers, builders for Workloads, WorkloadDeployments and
// Instances in the states users meet (written the way the controllers
// write them), a tiny stand-in for the controllers that makes a Workload
// converge, and golden files (go test -update rewrites them).
//
// Only tests import it.
package clitest
