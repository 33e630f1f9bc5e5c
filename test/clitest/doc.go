// Package clitest is the test harness of the CLI: a shared real API
// server (internal/planes) per test package, a namespace per test, a
// Factory wired to buffers, workload builders, and golden files (go test
// -update rewrites them).
//
// Statuses come from the real controllers, which clitest does not run:
// test/integration/fixtures/clilive does (StartControllers on its live
// plane, a clilive.Harness embedding this package's Harness, and the waits
// for the state a test needs: WaitRolledOut, Release of a Held workload,
// FailInstance, a grant the workload outgrows). Both live under test/,
// beside the integration suites' fixtures, so that internal/cli holds the
// CLI alone and imports nothing of internal/manager, internal/controller
// or internal/standin. The printer and view tests of the noun packages
// render objects built in memory instead (InMemory, InstanceStatus), in
// the states users meet.
//
// Only tests import it.
package clitest
