// Package cmdutil is the shared machinery of the datumctl-compute commands:
// the Factory that turns the global flags and the datumctl plugin
// environment into an API client, the compute enablement check every
// command that talks to a project runs first, the project and workload
// references (ProjectRef, WorkloadRef, and WorkloadWaitOptions with -o and
// --wait) commands embed in their options so that RunE resolves clients,
// enablement and the Workload between Validate and Run, output flags and
// printers (-o table|json|yaml), --wait and --timeout (WaitFlags), --city
// (CityFlag), list flags and views (ListFlags, ListView), tables that adapt
// to a terminal or a pipe,
// prompts, live progress rendering, and the errors that carry the process
// exit code.
//
// Nothing here holds package state: every command receives a *Factory and
// reads its streams, clock and environment from it, so tests run commands
// in-process against real API servers with buffers for streams and a fake
// clock.
package cmdutil
