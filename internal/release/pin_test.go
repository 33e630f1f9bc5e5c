package release

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/citycells/compute/internal/toolchain"
)

// TestRenderBundlesPinsEveryImageByDigest renders the repository's overlays
// with the real kustomize and pins for compute-manager and compute-quota:
// every container image in every bundle is the release's, by digest, no
// overlay keeps a tag, and the repository's config/ is left as it was.
func TestRenderBundlesPinsEveryImageByDigest(t *testing.T) {
	kustomize, err := toolchain.Path(toolchain.Kustomize)
	if err != nil {
		t.Fatal(err)
	}
	configDir, err := filepath.Abs(filepath.Join("..", "..", "config"))
	if err != nil {
		t.Fatal(err)
	}
	before := treeDigest(t, configDir)
	var pins []Pin
	want := map[string]string{}
	for _, b := range []string{"compute-manager", "compute-quota"} {
		sum := sha256.Sum256([]byte(b))
		ref, err := name.NewDigest("registry.example.com/rel/" + b + "@sha256:" + hex.EncodeToString(sum[:]))
		if err != nil {
			t.Fatal(err)
		}
		pins = append(pins, Pin{Binary: b, Ref: ref})
		want[b] = ref.String()
	}
	overlays, err := Overlays(configDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(overlays) == 0 {
		t.Fatal("no overlays in config/overlays")
	}
	dist := t.TempDir()
	written, err := RenderBundles(t.Context(), kustomize, configDir, dist, overlays, pins)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != len(overlays) {
		t.Fatalf("wrote %d bundles for %d overlays", len(written), len(overlays))
	}
	deployments := 0
	for _, o := range overlays {
		data, err := os.ReadFile(filepath.Join(dist, o+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			img, ok := strings.CutPrefix(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- ")), "image: ")
			if !ok {
				continue
			}
			deployments++
			binary := img[strings.LastIndex(img, "/")+1:]
			binary, _, _ = strings.Cut(binary, "@")
			binary, _, _ = strings.Cut(binary, ":")
			if got, ok := want[binary]; !ok || img != got {
				t.Errorf("%s.yaml: image %q, want the release's %s by digest", o, img, binary)
			}
		}
		// Rendering the same overlay from the repository must differ only
		// in the pins: the repository's copy still names the default tag.
		if slices.Contains([]string{"cell", "management-plane", "single-cluster"}, o) {
			out, err := exec.Command(kustomize, "build", filepath.Join(configDir, "overlays", o)).Output()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(out, []byte("image: ghcr.io/citycells/compute-manager:latest")) {
				t.Errorf("config/overlays/%s no longer renders the repository's default image: was it edited in place?", o)
			}
		}
	}
	if deployments == 0 {
		t.Fatal("no container image in any bundle: nothing proves the pins")
	}
	if after := treeDigest(t, configDir); after != before {
		t.Error("config/ changed while rendering the bundles; the release must pin a copy")
	}
}

// treeDigest hashes every file's path and content under dir.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h.Write([]byte(p))
		h.Write(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
