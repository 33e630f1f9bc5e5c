package cmdutil

import (
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Values of --dry-run, as kubectl takes them.
const (
	// DryRunNone changes things (the default).
	DryRunNone = "none"
	// DryRunClient shows what would change without sending it.
	DryRunClient = "client"
	// DryRunServer sends the change for the server to check — schema and
	// admission webhooks — without storing it.
	DryRunServer = "server"
)

// AddDryRunFlag binds --dry-run=none|client|server to target; a bare
// --dry-run means client.
func AddDryRunFlag(cmd *cobra.Command, target *string, what string) {
	*target = DryRunNone
	cmd.Flags().StringVar(target, "dry-run", DryRunNone,
		"\"client\" shows "+what+" without sending anything; \"server\" also has the server check it (schema and\n"+
			"admission webhooks) without storing it. A bare --dry-run means client.")
	cmd.Flags().Lookup("dry-run").NoOptDefVal = DryRunClient
	_ = cmd.RegisterFlagCompletionFunc("dry-run", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{DryRunNone, DryRunClient, DryRunServer}, cobra.ShellCompDirectiveNoFileComp
	})
}

// ValidateDryRun rejects an unknown --dry-run value.
func ValidateDryRun(v string) error {
	switch v {
	case DryRunNone, DryRunClient, DryRunServer:
		return nil
	}
	return UsageErrorf("--dry-run %q: use client or server (or none)", v)
}

// PatchOptions are the patch options of a --dry-run value: server
// dry-run for "server", nothing otherwise.
func PatchOptions(v string) []client.PatchOption {
	if v == DryRunServer {
		return []client.PatchOption{client.DryRunAll}
	}
	return nil
}

// CreateOptions are the create options of a --dry-run value.
func CreateOptions(v string) []client.CreateOption {
	if v == DryRunServer {
		return []client.CreateOption{client.DryRunAll}
	}
	return nil
}
