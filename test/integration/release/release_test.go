package release_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/citycells/compute/internal/release"
	"github.com/citycells/compute/internal/toolchain"
	"github.com/citycells/compute/test/integration/fixtures"
)

// The binary the dry run builds: the smallest of cmd/, for two platforms.
const binary = "compute-hello"

var platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// overlayPlanes say where each bundle goes: the first four are applied for
// real, in order (the hub and quota-plane bundles create the cells'
// identities); the others are dry runs on planes the first ones hold, as
// they would replace those installations.
var overlayPlanes = []struct {
	overlay, plane string
	real           bool
}{
	{"hub", hub, true},
	{"quota-plane", project, true},
	{"management-plane", project, true},
	{"cell", cell, true},
	{"cell-kubernetes", cell, false},
	{"single-cluster", project, false},
	{"dev", project, false},
	{"management-plane-hardened", project, false},
}

// externalGroups are served by operators the planes do not run.
var externalGroups = map[string]bool{"cert-manager.io": true, "monitoring.coreos.com": true}

// TestReleaseDryRun makes a release into a local registry and checks every
// artifact: the multi-arch index, its SBOM (found through the referrers
// API), the plugin archive and checksums, and one bundle per overlay that
// applies to its plane.
func TestReleaseDryRun(t *testing.T) {
	ctx := t.Context()
	kustomize, err := toolchain.Path(toolchain.Kustomize)
	if err != nil {
		t.Fatal(err)
	}
	goreleaser, err := toolchain.Path(toolchain.Goreleaser)
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")

	root := fixtures.RepoDir()
	work := t.TempDir()
	dist := filepath.Join(work, "dist")
	created := time.Unix(1767225600, 0).UTC()
	start := time.Now()
	res, err := release.Run(ctx, release.Options{
		ModuleDir:      root,
		Registry:       host + "/citycells",
		Version:        "v0.0.1-test",
		Revision:       "0123456789abcdef0123456789abcdef01234567",
		Created:        created,
		Binaries:       []string{binary},
		Platforms:      platforms,
		Dist:           dist,
		ConfigDir:      fixtures.RepoDir("config"),
		Kustomize:      kustomize,
		Goreleaser:     goreleaser,
		GoreleaserArgs: []string{"release", "--snapshot", "--clean", "--config", hostOnlyConfig(t, root, dist, filepath.Join(work, "goreleaser.yaml"))},
		GoreleaserEnv:  gitRemoteEnv(t, root),
		Log:            testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("release dry run: %s", time.Since(start).Round(time.Second))
	if len(res.Images) != 1 {
		t.Fatalf("released %d images, want 1", len(res.Images))
	}
	img := res.Images[0]

	t.Run("multi-arch index", func(t *testing.T) { checkIndex(t, img) })
	t.Run("SBOM", func(t *testing.T) { checkSBOM(t, img) })
	t.Run("plugin archives", func(t *testing.T) { checkArchives(t, dist) })
	t.Run("images.txt", func(t *testing.T) {
		data, err := os.ReadFile(res.ImagesFile)
		if err != nil {
			t.Fatal(err)
		}
		if want := binary + " " + img.Ref.String() + "\n"; string(data) != want {
			t.Errorf("images.txt = %q, want %q", data, want)
		}
	})
	t.Run("bundles apply to their planes", func(t *testing.T) {
		overlays, err := release.Overlays(fixtures.RepoDir("config"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, b := range res.Bundles {
			got = append(got, strings.TrimSuffix(filepath.Base(b), ".yaml"))
		}
		if !slices.Equal(got, overlays) {
			t.Fatalf("bundles %v, want one per overlay %v", got, overlays)
		}
		for _, o := range overlayPlanes {
			if o.real {
				apply(t, o.plane, o.overlay, readBundle(t, dist, o.overlay), false)
			}
		}
		for _, o := range overlayPlanes {
			apply(t, o.plane, o.overlay, readBundle(t, dist, o.overlay), true)
		}
		// The InstanceType catalog goes to the hub and the project planes
		// after the bundles that install its CRD; the project plane's copy
		// passes compute's admission webhook, which needs a running
		// compute-manager this suite does not start, so it goes to the hub.
		if res.InstanceTypes != filepath.Join(dist, "instancetypes.yaml") {
			t.Errorf("InstanceTypes bundle %q, want dist/instancetypes.yaml", res.InstanceTypes)
		}
		apply(t, hub, "instancetypes", readBundle(t, dist, "instancetypes"), false)
		for _, o := range overlays {
			if !slices.ContainsFunc(overlayPlanes, func(p struct {
				overlay, plane string
				real           bool
			}) bool {
				return p.overlay == o
			}) {
				t.Errorf("overlay %s has a bundle but no plane in this test: add it to overlayPlanes", o)
			}
		}
	})
}

// checkIndex: one OCI index tagged with the version, one image per
// platform, each with its platform's config and an ELF binary of its
// architecture at /compute-hello.
func checkIndex(t *testing.T, img release.Image) {
	idx, err := remote.Index(img.Tag)
	if err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d.String() != img.Ref.DigestStr() {
		t.Errorf("tag %s is %s, the release says %s", img.Tag, d, img.Ref.DigestStr())
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", im.MediaType, types.OCIImageIndex)
	}
	if im.Annotations["org.opencontainers.image.version"] != "v0.0.1-test" {
		t.Errorf("index annotations %v lack the version", im.Annotations)
	}
	var got []string
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, m := range im.Manifests {
		if m.Platform == nil {
			t.Fatalf("manifest %s has no platform", m.Digest)
		}
		got = append(got, m.Platform.String())
		image, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := image.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != m.Platform.OS || cf.Architecture != m.Platform.Architecture {
			t.Errorf("image %s: config says %s/%s, index says %s", m.Digest, cf.OS, cf.Architecture, m.Platform)
		}
		bin := fileInImage(t, image, binary)
		f, err := elf.NewFile(bytes.NewReader(bin))
		if err != nil {
			t.Fatalf("/%s of %s is not ELF: %v", binary, m.Platform, err)
		}
		if f.Machine != machines[m.Platform.Architecture] {
			t.Errorf("/%s of %s is built for %s", binary, m.Platform, f.Machine)
		}
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(got, want) {
		t.Errorf("index platforms %v, want %v", got, want)
	}
}

// checkSBOM: the referrers API lists one SPDX artifact for the index; it
// is the SBOM the release wrote to dist, and it describes the binary of
// each platform (its SHA-256 that of the binary in the image) with the
// standard library and the modules it links.
func checkSBOM(t *testing.T, img release.Image) {
	refs, err := remote.Referrers(img.Ref)
	if err != nil {
		t.Fatal(err)
	}
	rm, err := refs.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	// go-containerregistry's in-memory registry reports a referrer's
	// artifactType from its config's media type only (not the manifest's
	// artifactType field, which real registries read first), so the
	// referrer is matched by digest and its manifest read for the type.
	var found []v1.Descriptor
	for _, d := range rm.Manifests {
		if d.Digest == img.SBOM {
			found = append(found, d)
		}
	}
	if len(rm.Manifests) != 1 || len(found) != 1 {
		t.Fatalf("referrers of %s: %+v, want the SBOM artifact %s alone", img.Ref, rm.Manifests, img.SBOM)
	}
	desc, err := remote.Get(img.Ref.Context().Digest(img.SBOM.String()))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		ArtifactType string          `json:"artifactType"`
		Layers       []v1.Descriptor `json:"layers"`
		Subject      *v1.Descriptor  `json:"subject"`
	}
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	if m.ArtifactType != release.SBOMMediaType {
		t.Errorf("SBOM manifest artifactType %q, want %q", m.ArtifactType, release.SBOMMediaType)
	}
	if m.Subject == nil || m.Subject.Digest.String() != img.Ref.DigestStr() || len(m.Layers) != 1 || m.Layers[0].MediaType != release.SBOMMediaType {
		t.Fatalf("SBOM manifest %s: subject %+v, layers %+v; want the index and one %s layer", desc.Manifest, m.Subject, m.Layers, release.SBOMMediaType)
	}
	layer, err := remote.Layer(img.Ref.Context().Digest(m.Layers[0].Digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layer.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	local, err := os.ReadFile(img.SBOMPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pushed, local) {
		t.Errorf("the pushed SBOM differs from %s", img.SBOMPath)
	}
	var doc release.SPDXDocument
	if err := json.Unmarshal(pushed, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || !strings.Contains(doc.DocumentNamespace, img.Ref.DigestStr()[len("sha256:"):]) {
		t.Errorf("SBOM header: version %q, namespace %q", doc.SPDXVersion, doc.DocumentNamespace)
	}
	// The binaries in the images, by platform, hashed.
	idx, err := remote.Index(img.Ref)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, md := range im.Manifests {
		image, err := idx.Image(md.Digest)
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(fileInImage(t, image, binary))
		sums[hex.EncodeToString(s[:])] = md.Platform.String()
	}
	described := map[string]bool{}
	for _, r := range doc.Relationships {
		if r.Type == "DESCRIBES" {
			described[r.Related] = true
		}
	}
	var platformsSeen []string
	for _, p := range doc.Packages {
		if !described[p.SPDXID] {
			continue
		}
		if len(p.Checksums) != 1 || sums[p.Checksums[0].ChecksumValue] == "" {
			t.Errorf("SBOM package %s: checksums %v match no binary in the index (%v)", p.SPDXID, p.Checksums, sums)
			continue
		}
		platformsSeen = append(platformsSeen, sums[p.Checksums[0].ChecksumValue])
		var deps []string
		for _, r := range doc.Relationships {
			if r.Element == p.SPDXID && r.Type == "DEPENDS_ON" {
				deps = append(deps, r.Related)
			}
		}
		if !slices.ContainsFunc(deps, func(s string) bool { return strings.HasPrefix(s, "SPDXRef-Package-stdlib-go1.") }) {
			t.Errorf("SBOM package %s does not depend on the Go standard library: %v", p.SPDXID, deps)
		}
	}
	slices.Sort(platformsSeen)
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platformsSeen, want) {
		t.Errorf("SBOM describes the binaries of %v, want %v", platformsSeen, want)
	}
}

// checkArchives: goreleaser's archive of this machine's platform, listed in
// checksums.txt with its SHA-256.
func checkArchives(t *testing.T, dist string) {
	arch := map[string]string{"amd64": "x86_64", "arm64": "arm64"}[runtime.GOARCH]
	archive := "datumctl-compute_Linux_" + arch + ".tar.gz"
	data, err := os.ReadFile(filepath.Join(dist, archive))
	if err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	if want := hex.EncodeToString(s[:]) + "  " + archive; !strings.Contains(string(sums), want) {
		t.Errorf("checksums.txt %q lacks %q", sums, want)
	}
}

// fileInImage returns the content of the file at /<path> in image.
func fileInImage(t *testing.T, image v1.Image, path string) []byte {
	t.Helper()
	layers, err := image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Name == path {
				data, err := io.ReadAll(tr)
				_ = rc.Close()
				if err != nil {
					t.Fatal(err)
				}
				return data
			}
		}
		_ = rc.Close()
	}
	t.Fatalf("/%s is in no layer", path)
	return nil
}

func readBundle(t *testing.T, dist, overlay string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dist, overlay+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	if len(objs) == 0 {
		t.Fatalf("dist/%s.yaml holds no objects", overlay)
	}
	return objs
}

// apply server-side applies a bundle's objects to plane, Namespaces and
// CRDs first as kubectl would need them; dryRun is --dry-run=server.
func apply(t *testing.T, plane, overlay string, objs []*unstructured.Unstructured, dryRun bool) {
	t.Helper()
	c := env.Client(plane)
	rank := func(u *unstructured.Unstructured) int {
		switch u.GetKind() {
		case "Namespace":
			return 0
		case "CustomResourceDefinition":
			return 1
		}
		return 2
	}
	sorted := slices.Clone(objs)
	slices.SortStableFunc(sorted, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	for _, u := range sorted {
		if externalGroups[u.GroupVersionKind().Group] {
			continue
		}
		opts := []client.ApplyOption{client.FieldOwner("compute-release-test"), client.ForceOwnership}
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		if err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u.DeepCopy()), opts...); err != nil {
			t.Errorf("dist/%s.yaml: apply %s %s/%s to the %s plane (dry run %v): %v", overlay, u.GetKind(), u.GetNamespace(), u.GetName(), plane, dryRun, err)
		}
	}
}

// hostOnlyConfig writes .goreleaser.yaml with its dist moved to dist and
// its build narrowed to this machine's linux platform: the archive the
// dry run checks, one build instead of six.
func hostOnlyConfig(t *testing.T, root, dist, path string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["dist"] = dist
	builds, ok := cfg["builds"].([]any)
	if !ok || len(builds) != 1 {
		t.Fatalf(".goreleaser.yaml: want one build, got %v", cfg["builds"])
	}
	b := builds[0].(map[string]any)
	b["goos"] = []string{"linux"}
	b["goarch"] = []string{runtime.GOARCH}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// gitRemoteEnv: goreleaser reads the commit from git only when the
// checkout has a remote; a worktree without one gets the project's through
// git's environment configuration (as cmd/datumctl-compute's release test).
func gitRemoteEnv(t *testing.T, root string) []string {
	t.Helper()
	remotes, err := exec.Command("git", "-C", root, "remote").Output()
	if err != nil {
		t.Fatalf("git remote: %v", err)
	}
	if strings.TrimSpace(string(remotes)) != "" {
		return nil
	}
	return []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=remote.origin.url",
		"GIT_CONFIG_VALUE_0=https://github.com/citycells/compute.git"}
}

// testWriter logs the release's progress lines into the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
