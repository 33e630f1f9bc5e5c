// Package cmd is the compute-local command line: up, down, status,
// kubeconfig, env and image push over internal/local/platform, the fault
// controls (stop, start, restart, partition, heal), and the hidden commands
// a detached platform runs its link proxy and registry with. Every command
// has the anatomy of the project's CLIs (Complete, Validate, Run, as
// internal/cli/cmdutil.Runner) and exits with the CLIs' codes
// (internal/exitcode), plus ExitNotRunning when no platform is recorded.
package cmd
