package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/citycells/compute/internal/cli/cmdutil"
)

// named is manifestYAML with another name.
func named(name string) string {
	return strings.Replace(manifestYAML, "name: web", "name: "+name, 1)
}

// writeFiles writes files (path relative to dir: content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// readSource reads src and returns "name@where" per workload.
func readSource(t *testing.T, src ManifestSource) []string {
	t.Helper()
	ms, err := src.Read()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Workload.Name+"@"+m.Where)
	}
	return got
}

// stdin reads content as -f -.
func stdin(content string) ManifestSource {
	return ManifestSource{Filenames: []string{"-"}, In: strings.NewReader(content)}
}

func TestManifestsSeparatorLinesMayCarryComments(t *testing.T) {
	got := readSource(t, stdin(manifestYAML+"--- # the api\n"+named("api")+"---   \n"+named("cart")))
	want := []string{"web@standard input document 1", "api@standard input document 2", "cart@standard input document 3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestManifestsSkipEmptyDocuments(t *testing.T) {
	// Documents of comments, white space or nothing are skipped and not
	// counted, as kubectl does.
	got := readSource(t, stdin("# the shop\n---\n"+manifestYAML+"---\n# nothing here\n---\n\n---\n"+named("api")+"---\n"))
	want := []string{"web@standard input document 1", "api@standard input document 2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestManifestsADocumentThatCannotBeReadIsAnErrorNamingIt(t *testing.T) {
	for name, tc := range map[string]struct {
		content string
		want    string
	}{
		"not YAML":              {manifestYAML + "---\n{{{\n---\n" + named("api"), "standard input document 2 is not valid YAML or JSON"},
		"a bad separator":       {manifestYAML + "---apiVersion: v1\n" + named("api"), "standard input document 1 is not valid YAML or JSON: invalid Yaml document separator"},
		"another kind in List":  {"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n", `standard input item 1 holds apiVersion "v1" kind "ConfigMap"`},
		"an unknown item field": {manifestYAML + "---\n" + listOf("List", "v1", named("api"), strings.Replace(named("cart"), "minReplicas", "minReplica", 1)), `standard input document 2 item 2: strict decoding error: unknown field`},
		"a name twice in files": {listOf("WorkloadList", "compute.datumapis.com/v1alpha", manifestYAML, named("api")) + "---\n" + named("api"), "standard input document 2: workload api is also document 1 item 2; give each workload once"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := stdin(tc.content).Read()
			if err == nil || !strings.Contains(err.Error(), tc.want) || cmdutil.ExitCode(err) != cmdutil.ExitFailure {
				t.Errorf("got %v, want a failure containing %q", err, tc.want)
			}
		})
	}
}

// listOf is a List of kind and apiVersion holding docs.
func listOf(kind, apiVersion string, docs ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: " + apiVersion + "\nkind: " + kind + "\nitems:\n")
	for _, d := range docs {
		for i, line := range strings.Split(strings.TrimRight(d, "\n"), "\n") {
			if i == 0 {
				b.WriteString("- " + line + "\n")
			} else {
				b.WriteString("  " + line + "\n")
			}
		}
	}
	return b.String()
}

func TestManifestsReadTheItemsOfLists(t *testing.T) {
	got := readSource(t, stdin(listOf("List", "v1", manifestYAML, named("api"))+"--- # and\n"+
		listOf("WorkloadList", "compute.datumapis.com/v1alpha", named("cart"))))
	want := []string{"web@standard input document 1 item 1", "api@standard input document 1 item 2", "cart@standard input document 2 item 1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// JSON too.
	got = readSource(t, stdin(`{"apiVersion": "v1", "kind": "List", "items": [`+
		`{"apiVersion": "compute.datumapis.com/v1alpha", "kind": "Workload", "metadata": {"name": "web"}}]}`))
	if diff := cmp.Diff([]string{"web@standard input item 1"}, got); diff != "" {
		t.Errorf("a JSON List (-want +got):\n%s", diff)
	}
}

func TestManifestsReadDirectoriesAndSeveralFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"b.yaml":            named("b"),
		"a.yml":             named("a1") + "---\n" + named("a2"),
		"c.json":            `{"apiVersion": "compute.datumapis.com/v1alpha", "kind": "Workload", "metadata": {"name": "c"}}`,
		"empty.yaml":        "# nothing yet\n",
		"README.md":         "not a manifest",
		"sub/d.yaml":        named("d"),
		"sub/x/e.yaml":      named("e"),
		"other/f.yaml":      named("f"),
		"other/g.txt":       "not a manifest",
		"single.yaml":       named("single"),
		"emptydir/.keep":    "",
		"onlysub/in/i.yaml": named("i"),
	})
	p := func(name string) string { return filepath.Join(dir, name) }

	got := readSource(t, ManifestSource{Filenames: []string{dir}})
	want := []string{"a1@" + p("a.yml") + " document 1", "a2@" + p("a.yml") + " document 2", "b@" + p("b.yaml"), "c@" + p("c.json"),
		"single@" + p("single.yaml")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a directory (-want +got):\n%s", diff)
	}

	got = readSource(t, ManifestSource{Filenames: []string{p("sub")}, Recursive: true})
	if diff := cmp.Diff([]string{"d@" + p("sub/d.yaml"), "e@" + p("sub/x/e.yaml")}, got); diff != "" {
		t.Errorf("-R (-want +got):\n%s", diff)
	}

	got = readSource(t, ManifestSource{Filenames: []string{p("single.yaml"), p("other"), "-"}, In: strings.NewReader(named("h"))})
	want = []string{"single@" + p("single.yaml"), "f@" + p("other/f.yaml"), "h@standard input"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("several -f (-want +got):\n%s", diff)
	}

	for name, tc := range map[string]struct {
		src  ManifestSource
		want string
	}{
		"a name in two files":       {ManifestSource{Filenames: []string{p("b.yaml"), "-"}, In: strings.NewReader(named("b"))}, "standard input: workload b is also " + p("b.yaml") + "; give each workload once"},
		"stdin twice":               {ManifestSource{Filenames: []string{"-", "-"}}, "-f - is given twice"},
		"an empty file named":       {ManifestSource{Filenames: []string{p("empty.yaml")}}, p("empty.yaml") + " is empty: it must hold a Workload"},
		"no manifest file":          {ManifestSource{Filenames: []string{p("emptydir")}}, p("emptydir") + " holds no .yaml, .yml or .json file"},
		"subdirectories without -R": {ManifestSource{Filenames: []string{p("onlysub")}}, "(-R reads its subdirectories)"},
		"a missing file":            {ManifestSource{Filenames: []string{p("missing.yaml")}}, "cannot read " + p("missing.yaml")},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tc.src.Read()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestDeployTakesSeveralFilenamesAndRecursive(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"apps/a.yaml": named("a"), "apps/more/b.yaml": named("b"), "c.yaml": named("c")})
	cmd, o := newCommand(&cmdutil.Factory{})
	if err := cmdutil.Parse(cmd, o, []string{"-f", filepath.Join(dir, "apps"), "-R", "--filename", filepath.Join(dir, "c.yaml")}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, m := range o.manifests {
		got = append(got, m.Name+"@"+o.document(i))
	}
	want := []string{"a@" + filepath.Join(dir, "apps/a.yaml"), "b@" + filepath.Join(dir, "apps/more/b.yaml"), "c@" + filepath.Join(dir, "c.yaml")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if want := "deploy -f " + filepath.Join(dir, "apps") + " -f " + filepath.Join(dir, "c.yaml") + " -R"; o.cause != want {
		t.Errorf("cause %q, want %q", o.cause, want)
	}
	cmd, o = newCommand(&cmdutil.Factory{})
	err := cmdutil.Parse(cmd, o, []string{"a", "-f", filepath.Join(dir, "apps"), "-R"})
	if err == nil || cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "cannot pick one of the 2 workloads") {
		t.Errorf("NAME with several workloads: %v", err)
	}
}
