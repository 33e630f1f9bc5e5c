package release

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/citycells/compute/internal/images"
)

// Pin is one image of the release: the binary and the index it was pushed
// as, by digest.
type Pin struct {
	Binary string
	Ref    name.Digest
}

// ImageNames are the names the manifests may give binary's image before
// a release pins it: the base's short name and the published default
// (config/base sets compute-manager → ghcr.io/citycells/compute-manager).
func ImageNames(binary string) []string {
	return []string{binary, images.DefaultRepository + "/" + binary}
}

// RenderBundles copies configDir into a temporary release copy (the
// repository's overlays are never edited), pins every overlay's images to
// the release's digests there with `kustomize edit set image`
// (newName + digest), renders each overlay with `kustomize build` and
// writes it to distDir/<overlay>.yaml. It returns the paths written.
func RenderBundles(ctx context.Context, kustomize, configDir, distDir string, overlays []string, pins []Pin) ([]string, error) {
	work, err := os.MkdirTemp("", "compute-release-config-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(work) }()
	copyDir := filepath.Join(work, "config")
	if err := os.CopyFS(copyDir, os.DirFS(configDir)); err != nil {
		return nil, fmt.Errorf("failed to copy %s for the release: %w", configDir, err)
	}
	if err := os.MkdirAll(distDir, 0o755); err != nil {
		return nil, err
	}
	written := make([]string, 0, len(overlays))
	for _, o := range overlays {
		dir := filepath.Join(copyDir, "overlays", o)
		if _, err := os.Stat(filepath.Join(dir, "kustomization.yaml")); err != nil {
			return nil, fmt.Errorf("overlay %q: %w", o, err)
		}
		var args []string
		for _, p := range pins {
			for _, n := range ImageNames(p.Binary) {
				args = append(args, fmt.Sprintf("%s=%s", n, p.Ref.String()))
			}
		}
		if len(args) > 0 {
			if out, err := kustomizeRun(ctx, kustomize, dir, append([]string{"edit", "set", "image"}, args...)...); err != nil {
				return nil, fmt.Errorf("kustomize edit set image in overlay %s: %w\n%s", o, err, out)
			}
		}
		out, err := kustomizeRun(ctx, kustomize, dir, "build", ".")
		if err != nil {
			return nil, fmt.Errorf("kustomize build overlay %s: %w\n%s", o, err, out)
		}
		path := filepath.Join(distDir, o+".yaml")
		header := fmt.Sprintf("# compute release bundle: config/overlays/%s, images pinned by digest.\n", o)
		for _, p := range pins {
			header += fmt.Sprintf("# %s: %s\n", p.Binary, p.Ref.String())
		}
		if err := os.WriteFile(path, append([]byte(header), out...), 0o644); err != nil {
			return nil, err
		}
		written = append(written, path)
	}
	return written, nil
}

// Overlays lists the overlays of configDir/overlays, sorted.
func Overlays(configDir string) ([]string, error) {
	entries, err := fs.ReadDir(os.DirFS(configDir), "overlays")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

func kustomizeRun(ctx context.Context, kustomize, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, kustomize, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return ee.Stderr, err
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}
