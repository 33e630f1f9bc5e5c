package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/citycells/compute/internal/cli/cmdutil"
)

// DocsPath is where the generated reference lives, relative to the module
// root.
const DocsPath = "docs/cli.md"

// GenerateDocs renders the command reference (docs/cli.md) from the
// command tree, as `datumctl compute` shows it.
func GenerateDocs() string {
	f := &cmdutil.Factory{Clock: clock.RealClock{}, Name: PluginName, Build: cmdutil.BuildInfo{Version: "dev"}}
	root := NewRootCommand(f)
	var b strings.Builder
	b.WriteString("<!-- Generated from the command tree by `go run ./hack/gendocs`; do not edit. -->\n\n")
	b.WriteString("# datumctl compute — command reference\n\n")
	b.WriteString(intro + "\n\n")
	b.WriteString("## Exit codes\n\n| code | meaning |\n|---|---|\n")
	for _, e := range cmdutil.ExitCodes() {
		fmt.Fprintf(&b, "| %d | %s |\n", e.Code, e.Meaning)
	}
	b.WriteString("\n")
	b.WriteString(pluginDocs)
	b.WriteString(waitDocs)
	b.WriteString("## Global flags\n\nEvery command accepts these (`datumctl compute options` lists them; a command's `--help` shows only its own flags):\n\n```\n")
	b.WriteString(root.PersistentFlags().FlagUsagesWrapped(100))
	b.WriteString("```\n\n")
	b.WriteString("## Commands\n\n")
	var cmds []*cobra.Command
	walk(root, &cmds)
	for _, c := range cmds {
		anchor := strings.ReplaceAll(c.CommandPath(), " ", "-")
		fmt.Fprintf(&b, "- [`%s`](#%s) — %s\n", c.CommandPath(), anchor, c.Short)
	}
	b.WriteString("\n")
	for _, c := range cmds {
		section(&b, c)
	}
	return b.String()
}

// walk collects the documented commands under c, depth first, by name.
func walk(c *cobra.Command, out *[]*cobra.Command) {
	children := c.Commands()
	sort.Slice(children, func(i, j int) bool { return children[i].Name() < children[j].Name() })
	for _, child := range children {
		if child.Hidden || child.Name() == "help" || c.Name() == "completion" {
			continue
		}
		*out = append(*out, child)
		walk(child, out)
	}
}

// section renders one command.
func section(b *strings.Builder, c *cobra.Command) {
	fmt.Fprintf(b, "<a id=\"%s\"></a>\n## %s\n\n", strings.ReplaceAll(c.CommandPath(), " ", "-"), c.CommandPath())
	long := c.Long
	if long == "" {
		long = c.Short
	}
	b.WriteString(long + "\n\n")
	if c.Runnable() {
		fmt.Fprintf(b, "```\n%s\n```\n\n", c.UseLine())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(b, "Aliases: %s\n\n", strings.Join(c.Aliases, ", "))
	}
	if c.Example != "" {
		fmt.Fprintf(b, "Examples:\n\n```\n%s\n```\n\n", c.Example)
	}
	if fl := c.NonInheritedFlags(); fl.HasAvailableFlags() {
		fmt.Fprintf(b, "Flags:\n\n```\n%s```\n\n", fl.FlagUsagesWrapped(100))
	}
}

// pluginDocs describes how the plugin finds its project.
const pluginDocs = `## Where commands act

Under ` + "`datumctl compute`" + `, datumctl passes its context in the environment and the plugin talks to
the project's control plane, ` + "`https://$DATUM_API_HOST/apis/resourcemanager.miloapis.com/v1alpha1/projects/$DATUM_PROJECT/control-plane`" + `,
with a token it asks datumctl for when it needs one (` + "`$DATUM_CREDENTIALS_HELPER auth get-token [--session $DATUM_SESSION]`" + `;
tokens never come from the environment).

| variable | use |
|---|---|
| ` + "`DATUM_PROJECT`" + ` | the project (` + "`--project`" + ` overrides it) |
| ` + "`DATUM_API_HOST`" + ` | the API host |
| ` + "`DATUM_CREDENTIALS_HELPER`" + ` | the datumctl binary to ask for tokens |
| ` + "`DATUM_SESSION`" + ` | the datumctl session, passed to the helper |
| ` + "`DATUM_ORG`" + ` | the organization (informational) |
| ` + "`DATUM_PLUGIN_API_VERSION`" + ` | the plugin contract version; this plugin speaks 1 |

` + "`--kubeconfig`" + ` or ` + "`--context`" + ` switch to a cluster directly (standalone, e.g. the local platform);
` + "`--namespace`" + ` picks the namespace (default: the context's, else ` + "`default`" + `). ` + "`datumctl-compute --plugin-manifest`" + `
prints the manifest datumctl installs the plugin with.

Before a command uses the project it checks that compute is enabled (the project's ` + "`compute`" + `
ServiceEntitlement): not requested — it offers to request it (` + "`--yes`" + ` requests without asking) and waits
briefly for activation; requested but still activating — it says so and exits 3; rejected — it exits 1.

datumctl runs plugins even when nobody is logged in: it then sets ` + "`DATUM_PLUGIN_API_VERSION`" + ` but leaves
` + "`DATUM_API_HOST`" + ` empty. The plugin refuses to run then ("not logged in — run ` + "`datumctl login`" + `") unless
` + "`--kubeconfig`" + ` or ` + "`--context`" + ` name a cluster: it never falls back to whatever ` + "`$KUBECONFIG`" + ` points at
(` + "`deploy --dry-run=client`" + ` still renders offline).

Run standalone with no kubeconfig at all (and no ` + "`--server`" + `), a command does not try client-go's
` + "`localhost:8080`" + ` fallback (only ` + "`deploy --dry-run=client`" + `, which sends nothing, runs without a cluster); it
says "no cluster to talk to" and names the fix: ` + "`datumctl login`" + ` and run it as
` + "`datumctl compute`" + `, or pass ` + "`--kubeconfig`" + `. When the server cannot be reached (refused, unknown host, timed
out) the error names the host it tried and where it came from — the kubeconfig context and the flags that
change it (` + "`--kubeconfig`" + `, ` + "`--context`" + `, ` + "`--server`" + `), or ` + "`$DATUM_API_HOST`" + ` under datumctl.

` + installDocs

// waitDocs says how waits behave when the API misbehaves.
const waitDocs = `## Waiting and output

Waits — ` + "`deploy`" + `, ` + "`rollout status`" + `, ` + "`status --watch`" + `, ` + "`scale`/`restart`/`rollout undo --wait`" + `,
` + "`destroy --wait`" + ` and ` + "`workloads`/`instances -w`" + ` — watch the API (list, then watch; re-list and re-watch with
backoff after any failure). Transient trouble — 429, 5xx, timeouts, refused or reset connections, an API
server restarting — is retried for as long as the wait lasts and shown as a short ` + "`reconnecting… (reason)`" + `
line; a 401 gets one retry with a fresh token from datumctl (its tokens are short-lived), a second one ends
the wait with a hint to log in again. Only ` + "`--timeout`" + ` (exit 3), a terminal failure (exit 1), an error
retrying cannot fix (forbidden, not found) and Ctrl-C (exit 130) end a wait.

Output follows kubectl: ` + "`-o json|yaml|jsonpath=…|jsonpath-as-json=…|go-template=…`" + ` everywhere, ` + "`-o name`" + ` and
` + "`-o custom-columns=HEADER:FIELD,…`" + ` (e.g. ` + "`NAME:.metadata.name,CITY:.metadata.labels.compute\\.datumapis\\.com/city-code`" + `) where a
command prints API objects, ` + "`-o wide`" + ` on the ` + "`workloads`" + ` and ` + "`instances`" + ` lists, which also take
` + "`-l/--selector`" + `, ` + "`-A/--all-namespaces`" + `, ` + "`--no-headers`" + `, ` + "`-w/--watch`" + ` and ` + "`--sort-by=FIELD`" + ` (a JSONPath such as
` + "`.metadata.creationTimestamp`" + `; numbers and times sort by value, items without the field last; ` + "`instance-types`" + `
takes it too). Tables are aligned on a terminal and in a pipe alike, as kubectl's: a terminal cuts long
messages to its width, a pipe gets every value whole; scripts read fields with ` + "`-o jsonpath=`" + `,
` + "`-o custom-columns=`" + ` or ` + "`-o json`" + `. Progress is redrawn in place only on a terminal whose ` + "`TERM`" + ` is not
` + "`dumb`" + `; otherwise (a pipe, a log, ` + "`TERM=dumb`" + `) it is one line per change with no cursor movement.
AGE is relative; tables align by
display width. ` + "`workloads NAME -o yaml`" + ` prints a manifest ` + "`deploy -f`" + ` takes back with no change.

`

// installDocs says how to install the plugin.
const installDocs = `## Installing

### The name: this plugin is ` + "`compute`" + `, and replaces Datum's

` + "`compute`" + ` is also the name of Datum's official plugin in datumctl's plugin index. This project keeps the
name on purpose: it is a compatible implementation of the same API (` + "`compute.datumapis.com/v1alpha`" + `
Workloads), so ` + "`datumctl compute …`" + `, scripts and habits carry over. The two cannot be installed side by
side: both are the ` + "`datumctl-compute`" + ` binary and the ` + "`compute`" + ` entry of datumctl's plugins, so installing
one replaces the other. ` + "`datumctl plugin install citycells/compute`" + ` installs this one (its source is
recorded as ` + "`github.com/citycells/compute`" + `, and ` + "`datumctl plugin list`" + ` shows it with the description
"citycells/compute: …" from its manifest); ` + "`datumctl plugin install compute`" + ` (the index) puts Datum's back.
A ` + "`datumctl-compute`" + ` found on PATH conflicts the same way with one installed by datumctl.

The plugin needs datumctl v0.15.0 or later (the first with plugin dispatch; the manifest says so).

- From a release, managed by datumctl (checksums verified):
  ` + "`datumctl plugin install citycells/compute`" + ` (or ` + "`...@v0.1.0`" + ` for a version). datumctl fetches
  ` + "`datumctl-compute_<OS>_<arch>.tar.gz`" + ` (` + "`.zip`" + ` on Windows; OS ` + "`Linux`" + `, ` + "`Darwin`" + `, ` + "`Windows`" + `,
  arch ` + "`x86_64`" + `, ` + "`arm64`" + `) and ` + "`checksums.txt`" + ` from the GitHub release, checks the archive's sha256,
  and installs the ` + "`datumctl-compute`" + ` binary it holds. ` + "`.goreleaser.yaml`" + ` builds exactly these;
  ` + "`make release-snapshot`" + ` builds them locally into ` + "`./dist`" + `.
- From source, on PATH: ` + "`go install github.com/citycells/compute/cmd/datumctl-compute@latest`" + `, then
  ` + "`datumctl plugin trust compute`" + `. A plugin found on PATH gets its arguments unchanged only from
  datumctl v0.17.1 on; use v0.17.1 or later for PATH installs.
- The version: a release binary carries its tag (` + "`--plugin-manifest`" + `, ` + "`version`" + `); one installed with
  ` + "`go install …@vX.Y.Z`" + ` the module version Go recorded.
- Standalone: run ` + "`datumctl-compute`" + ` itself with ` + "`--kubeconfig`" + `.

`
