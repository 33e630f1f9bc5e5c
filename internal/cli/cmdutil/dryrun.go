package cmdutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
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

// OfflineClients are the Clients of --dry-run=client, which sends nothing:
// Clients (they only read the kubeconfig) or, when no project or cluster is
// configured — no kubeconfig, datumctl not logged in — clients without a
// Client, for the namespace of -n (else default), as kubectl renders
// offline.
func (f *Factory) OfflineClients() (*Clients, error) {
	c, err := f.Clients()
	if nc := (noCluster{}); err == nil || !errors.As(err, &nc) {
		return c, err
	}
	ns := f.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	return &Clients{Scheme: NewScheme(), Namespace: ns, Target: Target{Project: f.Project, Namespace: ns, Offline: true}}, nil
}

// DryRunDone ends a command run with --dry-run after it said what it would
// do: it says nothing was stored, then prints obj, what the object would
// become, when -o asked for a document.
func (f *Factory) DryRunDone(out io.Writer, mode string, o *OutputFlags, obj runtime.Object, scheme *runtime.Scheme) error {
	if mode == DryRunServer {
		_, _ = fmt.Fprintln(out, "Server dry run: the server accepted the change; nothing was stored.")
	} else {
		_, _ = fmt.Fprintln(out, "Dry run: nothing was changed.")
	}
	return f.PrintResult(o, obj, scheme)
}

// Would returns done, or "would <do>" in a dry run, to start a message:
// Would("Scaled", "scale", mode).
func Would(done, do, mode string) string {
	if mode == DryRunClient || mode == DryRunServer {
		return "Would " + do
	}
	return done
}

// MergePatched returns what obj becomes with the JSON merge patch applied,
// without sending it (--dry-run=client).
func MergePatched[T any, PT interface {
	*T
	client.Object
}](obj PT, patch []byte) (PT, error) {
	return patched[T](obj, func(doc []byte) ([]byte, error) { return jsonpatch.MergePatch(doc, patch) })
}

// JSONPatched returns what obj becomes with the JSON patch p applied,
// without sending it (--dry-run=client).
func JSONPatched[T any, PT interface {
	*T
	client.Object
}](obj PT, p JSONPatch) (PT, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	ops, err := jsonpatch.DecodePatch(data)
	if err != nil {
		return nil, err
	}
	return patched[T](obj, ops.Apply)
}

// patched returns what obj becomes when apply rewrites its JSON document.
func patched[T any, PT interface {
	*T
	client.Object
}](obj PT, apply func(doc []byte) ([]byte, error)) (PT, error) {
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	changed, err := apply(doc)
	if err != nil {
		return nil, fmt.Errorf("cannot apply the patch: %w", err)
	}
	out := PT(new(T))
	if err := json.Unmarshal(changed, out); err != nil {
		return nil, fmt.Errorf("cannot apply the patch: %w", err)
	}
	return out, nil
}
