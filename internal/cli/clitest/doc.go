// Package clitest is the test harness of the CLI: a shared real API
// server (internal/planes) per test package, a namespace per test, a
// Factory wired to buffers, and golden files (go test -update rewrites
// them).
//
// Statuses come from one of two places. On the live plane
// (StartControllers, NewLive) the real controllers run in-process — the
// management and cell roles, the cell's quota client with compute-quota's
// quota service, and the simulated runtime provider — and a test waits for
// the state it needs (WaitRolledOut, FailInstance, a grant the workload
// outgrows). Elsewhere a tiny stand-in for the controllers (Converge,
// Controllers) writes Workloads, WorkloadDeployments and Instances in the
// states users meet, the way the controllers write them: for states the
// controllers cannot hold on demand (an instance still provisioning, one
// waiting for quota) and for printer tests (InMemory, InstanceStatus).
//
// Only tests import it.
package clitest
