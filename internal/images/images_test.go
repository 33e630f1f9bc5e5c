package images

import (
	"archive/tar"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// testBinary is the image the tests build for real: compute-quota, the
// smaller of the two.
const testBinary = "compute-quota"

var (
	buildOnce sync.Once
	builtPath string
	buildErr  error
)

// realBinary builds ./cmd/compute-quota once per test run, as make images
// does.
func realBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "images-test-")
		if err != nil {
			buildErr = err
			return
		}
		builtPath, buildErr = GoBuild(context.Background(), moduleRoot(t), dir, testBinary, hostPlatform(), "v1.2.3-test", "0123456789abcdef")
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtPath != "" {
		_ = os.RemoveAll(filepath.Dir(builtPath))
	}
	os.Exit(code)
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "..", "..")
}

func hostPlatform() v1.Platform { return v1.Platform{OS: "linux", Architecture: runtime.GOARCH} }

func testSpec(t *testing.T) Spec {
	return Spec{
		Name: testBinary, Binary: realBinary(t), Platform: hostPlatform(),
		Version: "v1.2.3-test", Revision: "0123456789abcdef", Source: SourceURL,
		Created: time.Date(2026, 11, 24, 1, 2, 3, 0, time.UTC),
	}
}

// entry is one file of a layer as the image holds it.
type entry struct {
	Name     string
	Type     byte
	Mode     int64
	UID, GID int
	ModTime  time.Time
	Size     int64
}

func layerEntries(t *testing.T, l v1.Layer) ([]entry, map[string][]byte) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	var out []entry
	data := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, data
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.ModTime.UTC(), h.Size})
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			data[h.Name] = b
		}
	}
}

// TestImageIsWhatWeShip builds the compute-quota image, writes it like
// make images, reads both outputs back and checks what a cluster runs:
// entrypoint, non-root user, labels, two layers with only the expected,
// root-owned, commit-timed files, a CA bundle, no shell.
func TestImageIsWhatWeShip(t *testing.T) {
	spec := testSpec(t)
	if err := CheckStatic(spec.Binary); err != nil {
		t.Fatal(err)
	}
	img, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Write(t.TempDir(), DefaultRepository, spec, img)
	if err != nil {
		t.Fatal(err)
	}

	// Both outputs read back as the same image.
	idx, err := layout.ImageIndexFromPath(out.Layout)
	if err != nil {
		t.Fatalf("the OCI layout does not read back: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != out.Digest {
		t.Fatalf("the layout's index lists %v, want exactly %s", im.Manifests, out.Digest)
	}
	if p := im.Manifests[0].Platform; p == nil || p.Architecture != runtime.GOARCH || p.OS != "linux" {
		t.Errorf("the layout's descriptor platform is %v, want linux/%s", p, runtime.GOARCH)
	}
	fromTar, err := tarball.ImageFromPath(out.Tarball, nil)
	if err != nil {
		t.Fatalf("the tarball does not read back: %v", err)
	}
	tarCfg, err := fromTar.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if tarCfg != cfgName {
		t.Errorf("the tarball holds config %s, the layout %s", tarCfg, cfgName)
	}
	if want := "ghcr.io/citycells/compute-quota:v1.2.3-test"; out.Tag != want {
		t.Errorf("tag = %q, want %q", out.Tag, want)
	}

	fromLayout, err := idx.Image(out.Digest)
	if err != nil {
		t.Fatal(err)
	}
	mt, err := fromLayout.MediaType()
	if err != nil {
		t.Fatal(err)
	}
	if mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type = %s, want %s", mt, types.OCIManifestSchema1)
	}
	cf, err := fromLayout.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/compute-quota"}, cf.Config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	if len(cf.Config.Cmd) != 0 {
		t.Errorf("cmd = %v, want none", cf.Config.Cmd)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user = %q, want the numeric non-root 65532:65532", cf.Config.User)
	}
	wantLabels := map[string]string{
		LabelTitle: "compute-quota", LabelVersion: "v1.2.3-test", LabelRevision: "0123456789abcdef",
		LabelSource: SourceURL, LabelCreated: "2026-11-24T01:02:03Z",
	}
	if diff := cmp.Diff(wantLabels, cf.Config.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if !cf.Created.Equal(spec.Created) {
		t.Errorf("created = %s, want the commit time %s", cf.Created.Time, spec.Created)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("config platform = %s/%s", cf.OS, cf.Architecture)
	}

	layers, err := fromLayout.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 2 {
		t.Fatalf("the image has %d layers, want 2 (base, binary)", len(layers))
	}
	base, baseData := layerEntries(t, layers[0])
	bin, binData := layerEntries(t, layers[1])
	var names []string
	for _, e := range slices.Concat(base, bin) {
		names = append(names, e.Name)
		if e.UID != 0 || e.GID != 0 {
			t.Errorf("%s is owned by %d:%d, want root", e.Name, e.UID, e.GID)
		}
		if !e.ModTime.Equal(spec.Created) {
			t.Errorf("%s has mtime %s, want the commit time", e.Name, e.ModTime)
		}
	}
	wantNames := []string{
		"etc/", "etc/group", "etc/passwd", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt", "tmp/",
		"compute-quota",
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("files (-want +got): no shell, no package manager, nothing else:\n%s", diff)
	}
	if bin[0].Mode != 0o755 {
		t.Errorf("the binary's mode is %o, want 755", bin[0].Mode)
	}
	if tmp := base[len(base)-1]; tmp.Mode != 0o1777 {
		t.Errorf("/tmp mode is %o, want 1777", tmp.Mode)
	}
	want, err := os.ReadFile(spec.Binary)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(binData["compute-quota"], want) {
		t.Error("the binary in the image differs from the one built")
	}
	if !strings.Contains(string(baseData["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd does not name the nonroot user:\n%s", baseData["etc/passwd"])
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(baseData["etc/ssl/certs/ca-certificates.crt"]) {
		t.Fatal("the CA bundle holds no certificate")
	}
	if n := strings.Count(string(baseData["etc/ssl/certs/ca-certificates.crt"]), "BEGIN CERTIFICATE"); n < 100 {
		t.Errorf("the CA bundle holds %d certificates, want the Mozilla set (over 100)", n)
	}
}

// TestSameSourceSameDigest builds the image twice from two separate go
// builds of the same source and expects one digest.
func TestSameSourceSameDigest(t *testing.T) {
	spec := testSpec(t)
	first, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	again := spec
	again.Binary, err = GoBuild(context.Background(), moduleRoot(t), t.TempDir(), testBinary, hostPlatform(), spec.Version, spec.Revision)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Build(again)
	if err != nil {
		t.Fatal(err)
	}
	d1, err := first.Digest()
	if err != nil {
		t.Fatal(err)
	}
	d2, err := second.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 {
		t.Fatalf("same source, two digests: %s and %s", d1, d2)
	}
	// A different commit time is a different image: the digest follows the
	// source, not the build.
	later := spec
	later.Created = spec.Created.Add(time.Second)
	third, err := Build(later)
	if err != nil {
		t.Fatal(err)
	}
	if d3, _ := third.Digest(); d3 == d1 {
		t.Fatalf("a different commit time gave the same digest %s", d1)
	}
}

func TestCheckStaticRejectsADynamicBinary(t *testing.T) {
	// Debian's coreutils are dynamically linked against libc.
	for _, p := range []string{"/bin/ls", "/usr/bin/env"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		err := CheckStatic(p)
		if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
			t.Fatalf("CheckStatic(%s) = %v, want a dynamically linked error naming CGO_ENABLED=0", p, err)
		}
		return
	}
	t.Fatal("no dynamically linked system binary to check against (/bin/ls, /usr/bin/env)")
}

func TestCheckStaticRejectsANonELF(t *testing.T) {
	p := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckStatic(p); err == nil || !strings.Contains(err.Error(), "not an ELF binary") {
		t.Fatalf("CheckStatic(script) = %v, want not an ELF binary", err)
	}
}

func TestSpecValidateNamesEveryProblem(t *testing.T) {
	tests := map[string]struct {
		spec Spec
		want []string
	}{
		"an empty spec reports every missing field": {
			spec: Spec{},
			want: []string{`name "" must be a plain binary name`, "binary path is empty", "needs an OS and an architecture",
				"version is empty", "revision is empty", "created time is zero"},
		},
		"a name with a slash is refused": {
			spec: Spec{Name: "cmd/x", Binary: "x", Platform: hostPlatform(), Version: "v1", Revision: "r", Created: time.Unix(1, 0)},
			want: []string{`name "cmd/x" must be a plain binary name`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.spec.Validate()
			if err == nil {
				t.Fatal("Validate() = nil")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to mention %q", err, w)
				}
			}
		})
	}
}
