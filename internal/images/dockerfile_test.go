package images

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stage is one FROM ... AS name block of the Dockerfile, its instructions
// with line continuations joined.
type stage struct {
	from   string
	instrs []string
}

func parseDockerfile(t *testing.T) map[string]stage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	cur := ""
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") || (l == "" && cur == "") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		lines = append(lines, strings.Join(strings.Fields(cur+l), " "))
		cur = ""
	}
	stages := map[string]stage{}
	fromRE := regexp.MustCompile(`^FROM (?:--platform=\S+ )?(\S+) AS (\S+)$`)
	name := ""
	for _, l := range lines {
		if m := fromRE.FindStringSubmatch(l); m != nil {
			name = m[2]
			stages[name] = stage{from: m[1]}
			continue
		}
		if name != "" {
			s := stages[name]
			s.instrs = append(s.instrs, l)
			stages[name] = s
		}
	}
	return stages
}

// instr returns the arguments of the stage's instructions named kw.
func (s stage) instr(kw string) []string {
	var out []string
	for _, i := range s.instrs {
		if strings.HasPrefix(i, kw+" ") {
			out = append(out, strings.TrimPrefix(i, kw+" "))
		}
	}
	return out
}

// TestDockerfileBuildsWhatMakeImagesPacks keeps the Dockerfile in step with
// make images: its build stage runs the same packer, every image stage
// starts from scratch, copies only that packer's staged file system, and
// sets the same USER, ENTRYPOINT, ENV and labels as Build.
func TestDockerfileBuildsWhatMakeImagesPacks(t *testing.T) {
	stages := parseDockerfile(t)
	build, ok := stages["build"]
	if !ok {
		t.Fatal("the Dockerfile has no build stage")
	}
	runs := strings.Join(build.instr("RUN"), "\n")
	if !strings.Contains(runs, "go run ./hack/images --stage /out") {
		t.Errorf("the build stage must stage the images with `go run ./hack/images --stage /out`, runs:\n%s", runs)
	}
	spec := testSpec(t)
	for _, name := range Binaries {
		t.Run(name, func(t *testing.T) {
			st, ok := stages[name]
			if !ok {
				t.Fatalf("the Dockerfile has no %q stage: every image of make images needs one", name)
			}
			if st.from != "scratch" {
				t.Errorf("FROM %s, want scratch (the base layer is packed by hack/images)", st.from)
			}
			if diff := cmp.Diff([]string{"--from=build /out/" + name + "/ /"}, st.instr("COPY")); diff != "" {
				t.Errorf("COPY (-want +got): the stage copies only the staged file system:\n%s", diff)
			}
			if diff := cmp.Diff([]string{User}, st.instr("USER")); diff != "" {
				t.Errorf("USER (-want +got):\n%s", diff)
			}
			s := spec
			s.Name = name
			if diff := cmp.Diff([]string{`["` + s.Entrypoint()[0] + `"]`}, st.instr("ENTRYPOINT")); diff != "" {
				t.Errorf("ENTRYPOINT (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"SSL_CERT_FILE=/" + CACertificatesPath}, st.instr("ENV")); diff != "" {
				t.Errorf("ENV (-want +got):\n%s", diff)
			}
			if len(st.instr("RUN")) != 0 {
				t.Errorf("the %s stage runs %v: a scratch image has no shell", name, st.instr("RUN"))
			}
			labels := map[string]string{}
			for _, l := range st.instr("LABEL") {
				for _, kv := range strings.Fields(l) {
					k, v, _ := strings.Cut(kv, "=")
					labels[k] = v
				}
			}
			var keys []string
			for k := range labels {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if diff := cmp.Diff(LabelKeys, keys); diff != "" {
				t.Errorf("LABEL keys (-want +got):\n%s", diff)
			}
			if labels[LabelTitle] != name || labels[LabelSource] != SourceURL {
				t.Errorf("title/source labels = %q/%q, want %q/%q", labels[LabelTitle], labels[LabelSource], name, SourceURL)
			}
		})
	}
}

// TestStageHoldsTheImageFiles checks that the staged file system the
// Dockerfile copies is, file for file, what Build packs into the layers.
func TestStageHoldsTheImageFiles(t *testing.T) {
	spec := testSpec(t)
	dir := t.TempDir()
	if err := Stage(spec, dir); err != nil {
		t.Fatal(err)
	}
	type file struct {
		Mode fs.FileMode
		Data []byte
	}
	staged := map[string]file{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		f := file{Mode: info.Mode()}
		if !d.IsDir() {
			if f.Data, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		staged[filepath.ToSlash(rel)] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	packed := map[string]file{}
	for _, l := range layers {
		entries, data := layerEntries(t, l)
		for _, e := range entries {
			name := strings.TrimSuffix(e.Name, "/")
			mode := fs.FileMode(e.Mode & 0o777)
			if e.Mode&0o1000 != 0 {
				mode |= fs.ModeSticky
			}
			if strings.HasSuffix(e.Name, "/") {
				mode |= fs.ModeDir
			}
			packed[name] = file{Mode: mode, Data: data[e.Name]}
		}
	}
	if diff := cmp.Diff(packed, staged, cmp.Comparer(bytes.Equal)); diff != "" {
		t.Errorf("the staged file system differs from the layers (-packed +staged):\n%s", diff)
	}
}
