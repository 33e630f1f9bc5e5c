//go:build linux

// Command compute-local runs compute's local platform on one machine from
// real components — a project plane, a Karmada federation plane and city
// cells — with no Docker and no external cluster:
//
//	compute-local up          # start; prints kubeconfigs and what to type next
//	compute-local status      # every component and Karmada cluster
//	compute-local kubeconfig hub
//	eval "$(compute-local env)"
//	compute-local down        # stop everything
//
// The platform itself is internal/local/platform, the commands
// internal/local/cmd; docs/local-platform.md describes it. It runs only on
// Linux (main_other.go stops the build elsewhere).
package main

import (
	"os"

	localcmd "github.com/citycells/compute/internal/local/cmd"
)

func main() {
	os.Exit(localcmd.Main(os.Args[1:], localcmd.Streams{Out: os.Stdout, Err: os.Stderr}))
}
