package main

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/citycells/compute/internal/toolchain"
)

// pluginBinary is the binary `datumctl plugin install` extracts from a
// release archive (with .exe on Windows).
const pluginBinary = "datumctl-compute"

// assetName is the archive datumctl downloads on goos/goarch: the binary
// name, the title-case OS and x86_64 or arm64, .zip on Windows (datumctl's
// plugin install, pluginAssetName).
func assetName(goos, goarch string) string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "arm64"}[goarch]
	ext := "tar.gz"
	if goos == "windows" {
		ext = "zip"
	}
	return fmt.Sprintf("%s_%s_%s.%s", pluginBinary, strings.ToUpper(goos[:1])+goos[1:], arch, ext)
}

// TestReleaseSnapshotIsWhatDatumctlPluginInstallFetches runs the release
// configuration (.goreleaser.yaml) as `make release-snapshot` does, into a
// temporary directory, and checks what a user's `datumctl plugin install`
// meets: the configuration releases every supported platform, and an
// archive (of the two it builds: narrowBuilds) named as datumctl asks for it,
// each holding only the plugin binary; a checksums.txt whose lines verify
// every archive; and, on this machine's platform, a binary whose plugin
// manifest and version carry the stamped release version, never "dev".
func TestReleaseSnapshotIsWhatDatumctlPluginInstallFetches(t *testing.T) {
	goreleaser, err := toolchain.Path(toolchain.Goreleaser)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	dist := filepath.Join(work, "dist")
	config := releaseConfig(t, root, dist, filepath.Join(work, "goreleaser.yaml"))

	cmd := exec.CommandContext(t.Context(), goreleaser, "release", "--snapshot", "--clean", "--config", config)
	cmd.Dir = root
	cmd.Env = gitRemoteEnv(t, root)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("goreleaser release --snapshot: %v\n%s", err, out)
	}

	var want []string
	for _, target := range builtTargets {
		goos, goarch, _ := strings.Cut(target, "_")
		want = append(want, assetName(goos, goarch))
	}
	slices.Sort(want)
	if got := archives(t, dist); !slices.Equal(got, want) {
		t.Fatalf("archives in dist:\n got %v\nwant %v", got, want)
	}

	sums := checksums(t, filepath.Join(dist, "checksums.txt"))
	if got := sortedKeys(sums); !slices.Equal(got, want) {
		t.Errorf("checksums.txt lists %v, want every archive: %v", got, want)
	}
	for _, name := range want {
		data, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != sums[name] {
			t.Errorf("%s: sha256 %s, checksums.txt says %s", name, got, sums[name])
		}
		files, err := archiveFiles(name, data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bin := pluginBinary
		if strings.HasSuffix(name, ".zip") {
			bin += ".exe"
		}
		if got := sortedKeys(files); !slices.Equal(got, []string{bin}) {
			t.Errorf("%s holds %v, want only %s", name, got, bin)
		}
	}

	version := releaseVersion(t, dist)
	host := assetName(runtime.GOOS, runtime.GOARCH)
	data, err := os.ReadFile(filepath.Join(dist, host))
	if err != nil {
		t.Fatalf("no archive for this machine (%s/%s): %v", runtime.GOOS, runtime.GOARCH, err)
	}
	files, err := archiveFiles(host, data)
	if err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(work, "extracted", pluginBinary)
	if err := os.MkdirAll(filepath.Dir(binary), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(binary, files[filepath.Base(binary)], 0o755); err != nil {
		t.Fatal(err)
	}
	checkStampedVersion(t, root, binary, version)
}

// gitRemoteEnv returns the environment goreleaser runs in. goreleaser reads
// the commit and its time from git only when the checkout has a remote
// (otherwise a snapshot says commit "none"); a checkout without one — a
// worktree of a local repository — gets the project's through git's
// environment configuration, the repository left untouched.
func gitRemoteEnv(t *testing.T, root string) []string {
	t.Helper()
	env := os.Environ()
	remotes, err := exec.CommandContext(t.Context(), "git", "-C", root, "remote").Output()
	if err != nil {
		t.Fatalf("git remote: %v", err)
	}
	if strings.TrimSpace(string(remotes)) == "" {
		env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=remote.origin.url",
			"GIT_CONFIG_VALUE_0=https://github.com/citycells/compute.git")
	}
	return env
}

// releaseConfig writes the repository's release configuration with its
// dist directory moved to dist, and returns its path.
func releaseConfig(t *testing.T, root, dist, path string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if cfg["dist"] != "dist" {
		t.Errorf(".goreleaser.yaml: dist is %v; make release-snapshot and .gitignore expect dist", cfg["dist"])
	}
	cfg["dist"] = dist
	narrowBuilds(t, cfg)
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// releasedPlatforms are the platforms a release ships the plugin for:
// .goreleaser.yaml must build exactly these.
var releasedPlatforms = map[string][]any{"goos": {"linux", "darwin", "windows"}, "goarch": {"amd64", "arm64"}}

// builtTargets are the platforms the test builds of those: this machine's
// (whose binary it runs) and Windows on arm64 — a .zip, an .exe, the
// arm64 name and the only platform whose code differs (the terminal's
// resize events). Every release archive is named by the same template;
// building the other four (darwin shares the Unix code with linux) would
// cost four more cross builds of the whole plugin and check nothing else.
var builtTargets = []string{runtime.GOOS + "_" + runtime.GOARCH, "windows_arm64"}

// narrowBuilds checks that the configuration releases the plugin for every
// supported platform, and has the test's copy build builtTargets only.
func narrowBuilds(t *testing.T, cfg map[string]any) {
	t.Helper()
	builds, _ := cfg["builds"].([]any)
	if len(builds) != 1 {
		t.Fatalf(".goreleaser.yaml: want one build (the plugin), got %d", len(builds))
	}
	build, _ := builds[0].(map[string]any)
	for key, want := range releasedPlatforms {
		if got, _ := build[key].([]any); !slices.Equal(got, want) {
			t.Errorf(".goreleaser.yaml: %s is %v, want %v: datumctl users fetch an archive for each", key, got, want)
		}
	}
	for _, key := range []string{"ignore", "targets"} {
		if _, ok := build[key]; ok {
			t.Errorf(".goreleaser.yaml: %s leaves platforms out of the release", key)
		}
	}
	build["targets"] = builtTargets
}

// archives lists the archives at the top of dist.
func archives(t *testing.T, dist string) []string {
	t.Helper()
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".tar.gz") || strings.HasSuffix(n, ".zip")) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// checksumLine is goreleaser's sha256sum format, which datumctl reads.
var checksumLine = regexp.MustCompile(`^([0-9a-f]{64})  (\S+)$`)

// checksums reads checksums.txt into archive name → sha256, failing on any
// line not in "<sha256>  <file>" form.
func checksums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := checksumLine.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Errorf("checksums.txt: line %q is not \"<sha256>  <file>\"", sc.Text())
			continue
		}
		out[m[2]] = m[1]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// archiveFiles returns the regular files of a .tar.gz or .zip archive by
// path, failing on anything that is not a regular file.
func archiveFiles(name string, data []byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	if strings.HasSuffix(name, ".zip") {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, err
		}
		for _, f := range zr.File {
			if !f.Mode().IsRegular() {
				return nil, fmt.Errorf("%s is not a regular file", f.Name)
			}
			rc, err := f.Open()
			if err != nil {
				return nil, err
			}
			b, err := io.ReadAll(rc)
			_ = rc.Close()
			if err != nil {
				return nil, err
			}
			out[f.Name] = b
		}
		return out, nil
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%s is not a regular file", hdr.Name)
		}
		if hdr.FileInfo().Mode().Perm()&0o111 == 0 {
			return nil, fmt.Errorf("%s is not executable (mode %v)", hdr.Name, hdr.FileInfo().Mode())
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		out[hdr.Name] = b
	}
}

// releaseVersion is the version goreleaser built, from dist/metadata.json,
// with the leading v the binaries are stamped with.
func releaseVersion(t *testing.T, dist string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dist, "metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(raw, &md); err != nil {
		t.Fatalf("metadata.json: %v", err)
	}
	if md.Version == "" {
		t.Fatalf("metadata.json names no version:\n%s", raw)
	}
	return "v" + md.Version
}

// checkStampedVersion runs the extracted binary as datumctl does at
// install (--plugin-manifest) and as a user does (version -o json).
func checkStampedVersion(t *testing.T, root, binary, version string) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), binary, "--plugin-manifest").Output()
	if err != nil {
		t.Fatalf("%s --plugin-manifest: %v", binary, err)
	}
	var manifest struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(out, &manifest); err != nil {
		t.Fatalf("--plugin-manifest is not JSON: %v\n%s", err, out)
	}
	if manifest.Name != "compute" || manifest.Version != version {
		t.Errorf("manifest names %q version %q, want compute %s", manifest.Name, manifest.Version, version)
	}
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+-snapshot\.[0-9a-f]+$`).MatchString(manifest.Version) {
		t.Errorf("a snapshot's version is the next patch, marked: got %q", manifest.Version)
	}

	out, err = exec.CommandContext(t.Context(), binary, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("%s version -o json: %v", binary, err)
	}
	var info struct {
		Version string `json:"version"`
		Commit  string `json:"commit"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("version -o json is not JSON: %v\n%s", err, out)
	}
	head, err := exec.CommandContext(t.Context(), "git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != version || info.Commit == "" || !strings.HasPrefix(string(head), info.Commit) {
		t.Errorf("version says %+v, want %s at commit %s", info, version, strings.TrimSpace(string(head)))
	}
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
