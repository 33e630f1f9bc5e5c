// Package clitest is the test harness of the CLI: a shared real API
// server (internal/planes) per test package, a namespace per test, a
// Factory wired to buffers, and golden files (go test -update rewrites
// them).
//
// Statuses come from the real controllers: on the live plane
// (StartControllers, NewLive) the management and cell roles, the cell's
// quota client with compute-quota's quota service, and the simulated
// runtime provider run in-process, and a test waits for the state it
// needs (WaitRolledOut, Release of a Held workload, FailInstance, a grant
// the workload outgrows). The printer and view tests of the noun packages
// render objects built in memory instead (InMemory, InstanceStatus), in
// the states users meet.
//
// Only tests import it.
package clitest
