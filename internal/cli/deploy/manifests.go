package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// manifestExtensions are the files -f reads from a directory, as kubectl.
var manifestExtensions = []string{".json", ".yaml", ".yml"}

// Manifest is a Workload read by -f and where it was read.
type Manifest struct {
	// Workload is the decoded Workload.
	Workload *computev1alpha.Workload
	// File names the file in messages ("standard input" for -).
	File string
	// Where names the Workload in messages: File, then "document N" when
	// the file holds several documents and "item N" of a List.
	Where string
}

// ManifestSource is what -f reads: files, directories and - for
// standard input.
type ManifestSource struct {
	// Filenames are the -f values: a file, a directory (its .yaml, .yml
	// and .json files, sorted) or - (In).
	Filenames []string
	// Recursive is -R: directories are read with their subdirectories.
	Recursive bool
	// In is standard input, read for -.
	In io.Reader
}

// ReadManifest reads one Workload from path ("-" reads in); see
// ReadManifests. A file of several documents is refused.
func ReadManifest(path string, in []byte) (*computev1alpha.Workload, error) {
	ws, err := ReadManifests(path, in)
	if err != nil {
		return nil, err
	}
	if len(ws) > 1 {
		return nil, cmdutil.Failf("%s holds %d documents: give one Workload", SourceName(path), len(ws))
	}
	return ws[0], nil
}

// ReadManifests reads the Workloads of path ("-" reads in); see
// ManifestSource.Read.
func ReadManifests(path string, in []byte) ([]*computev1alpha.Workload, error) {
	ms, err := ManifestSource{Filenames: []string{path}, In: bytes.NewReader(in)}.Read()
	if err != nil {
		return nil, err
	}
	out := make([]*computev1alpha.Workload, len(ms))
	for i, m := range ms {
		out[i] = m.Workload
	}
	return out, nil
}

// Read reads the Workloads of s, in order, with Kubernetes' YAML reader:
// one per YAML document (a separator line may carry a comment) or per
// item of a List or WorkloadList. A document of nothing but comments is
// skipped, as kubectl does; one that cannot be read, an unknown field,
// another kind and a workload given twice are errors naming the file and,
// when it holds several, the document. Its errors are failures (exit 1),
// not usage errors: the command line was right, the files are wrong.
func (s ManifestSource) Read() ([]Manifest, error) {
	files, err := s.files()
	if err != nil {
		return nil, err
	}
	var out []Manifest
	for _, f := range files {
		data, err := s.readFile(f.path)
		if err != nil {
			return nil, err
		}
		ms, err := readDocuments(SourceName(f.path), data)
		if err != nil {
			return nil, err
		}
		if len(ms) == 0 && !f.inDir {
			return nil, cmdutil.Failf("%s is empty: it must hold a Workload", SourceName(f.path))
		}
		out = append(out, ms...)
	}
	if len(out) == 0 {
		return nil, cmdutil.Failf("%s holds no Workload", strings.Join(s.Filenames, ", "))
	}
	return out, checkOnce(out)
}

// manifestFile is a file to read: a -f value, or a file of a directory
// given with -f (inDir: it may be empty).
type manifestFile struct {
	path  string
	inDir bool
}

// files lists the files of s, directories expanded.
func (s ManifestSource) files() ([]manifestFile, error) {
	var out []manifestFile
	stdin := false
	for _, name := range s.Filenames {
		if name == "-" {
			if stdin {
				return nil, cmdutil.UsageErrorf("-f - is given twice: standard input is read once")
			}
			stdin = true
			out = append(out, manifestFile{path: name})
			continue
		}
		info, err := os.Stat(name)
		if err != nil {
			return nil, cmdutil.Failf("cannot read %s: %v", name, err)
		}
		if !info.IsDir() {
			out = append(out, manifestFile{path: name})
			continue
		}
		found, err := s.dirFiles(name)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

// dirFiles lists the manifest files of dir, sorted by path; with
// Recursive, those of its subdirectories too.
func (s ManifestSource) dirFiles(dir string) ([]manifestFile, error) {
	var out []manifestFile
	subdirs := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != dir && !s.Recursive:
			subdirs = true
			return filepath.SkipDir
		case !d.IsDir() && isManifestFile(path):
			out = append(out, manifestFile{path: path, inDir: true})
		}
		return nil
	})
	if err != nil {
		return nil, cmdutil.Failf("cannot read %s: %v", dir, err)
	}
	if len(out) == 0 {
		hint := ""
		if subdirs {
			hint = " (-R reads its subdirectories)"
		}
		return nil, cmdutil.Failf("%s holds no .yaml, .yml or .json file%s", dir, hint)
	}
	return out, nil
}

// isManifestFile reports whether a file of a directory is read: by its
// extension, as kubectl.
func isManifestFile(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	for _, e := range manifestExtensions {
		if ext == e {
			return true
		}
	}
	return false
}

// readFile reads path, or In for -.
func (s ManifestSource) readFile(path string) ([]byte, error) {
	if path == "-" {
		if s.In == nil {
			return nil, nil
		}
		data, err := io.ReadAll(s.In)
		if err != nil {
			return nil, cmdutil.UsageErrorf("cannot read the manifest from standard input: %v", err)
		}
		return data, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, cmdutil.Failf("cannot read %s: %v", path, err)
	}
	return data, nil
}

// readDocuments decodes the Workloads of data, the content of file.
func readDocuments(file string, data []byte) ([]Manifest, error) {
	docs, err := splitDocuments(file, data)
	if err != nil {
		return nil, err
	}
	var out []Manifest
	for i, doc := range docs {
		where := file
		if len(docs) > 1 {
			where = fmt.Sprintf("%s document %d", file, i+1)
		}
		ws, err := decodeDocument(where, doc)
		if err != nil {
			return nil, err
		}
		out = append(out, ws...)
	}
	for i := range out {
		out[i].File = file
	}
	return out, nil
}

// splitDocuments splits data into YAML documents with Kubernetes' YAML
// reader, skipping those of nothing but comments and white space; a
// document is numbered among those kept.
func splitDocuments(file string, data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, cmdutil.Failf("%s document %d is not valid YAML or JSON: %v", file, len(docs)+1, err)
		}
		if !emptyDocument(doc) {
			docs = append(docs, doc)
		}
	}
}

// emptyDocument reports whether a YAML document holds nothing: only
// comments, white space or null, which kubectl skips.
func emptyDocument(doc []byte) bool {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return false
	}
	j = bytes.TrimSpace(j)
	return len(j) == 0 || bytes.Equal(j, []byte("null"))
}

// decodeDocument decodes one document, where naming it in errors: a
// Workload, or the Workloads a List or WorkloadList holds.
func decodeDocument(where string, doc []byte) ([]Manifest, error) {
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, cmdutil.Failf("%s is not valid YAML or JSON: %v", where, err)
	}
	if !isList(head.APIVersion, head.Kind) {
		w, err := decodeWorkload(where, doc)
		if err != nil {
			return nil, err
		}
		return []Manifest{{Workload: w, Where: where}}, nil
	}
	out := make([]Manifest, 0, len(head.Items))
	for i, item := range head.Items {
		itemWhere := fmt.Sprintf("%s item %d", where, i+1)
		w, err := decodeWorkload(itemWhere, item)
		if err != nil {
			return nil, err
		}
		out = append(out, Manifest{Workload: w, Where: itemWhere})
	}
	return out, nil
}

// isList reports whether a document is a List (kubectl's, any version)
// or a WorkloadList.
func isList(apiVersion, kind string) bool {
	return kind == "List" || (kind == computev1alpha.WorkloadKind+"List" && apiVersion == computev1alpha.GroupVersion.String())
}

// decodeWorkload decodes one Workload, where naming it in errors.
func decodeWorkload(where string, doc []byte) (*computev1alpha.Workload, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, cmdutil.Failf("%s is not valid YAML or JSON: %v", where, err)
	}
	want := computev1alpha.GroupVersion.String()
	if head.Kind != computev1alpha.WorkloadKind || head.APIVersion != want {
		return nil, cmdutil.Failf("%s holds apiVersion %q kind %q: deploy takes apiVersion %s kind %s (or a List of them)",
			where, head.APIVersion, head.Kind, want, computev1alpha.WorkloadKind)
	}
	// The apimachinery strict decoder names the full path of an unknown
	// or duplicate field.
	scheme := cmdutil.NewScheme()
	dec := serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, scheme, scheme,
		serializerjson.SerializerOptions{Yaml: true, Strict: true})
	var w computev1alpha.Workload
	if _, _, err := dec.Decode(doc, nil, &w); err != nil {
		return nil, cmdutil.Failf("%s: %v", where, err)
	}
	return &w, nil
}

// checkOnce refuses a workload given twice: by namespace and name, in
// any file.
func checkOnce(ms []Manifest) error {
	seen := map[string]Manifest{}
	for _, m := range ms {
		w := m.Workload
		key := w.Namespace + "/" + w.Name
		if first, ok := seen[key]; ok && w.Name != "" {
			other := first.Where
			if first.File == m.File && first.Where != first.File {
				other = strings.TrimPrefix(first.Where, first.File+" ")
			}
			return cmdutil.Failf("%s: workload %s is also %s; give each workload once", m.Where, w.Name, other)
		}
		seen[key] = m
	}
	return nil
}

// SourceName names the -f file in messages: "standard input" for -.
func SourceName(path string) string {
	if path == "-" {
		return "standard input"
	}
	return path
}
