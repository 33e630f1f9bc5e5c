// Package release builds and publishes a compute release: for every binary
// of cmd/ that runs in a cluster, one OCI image index holding a linux/amd64
// and a linux/arm64 image (internal/images builds each, as `make images`
// does) pushed to a registry; an SPDX SBOM of each index, generated from the
// build information Go records in every binary and pushed as an OCI 1.1
// artifact whose subject is the index; one install bundle per kustomize
// overlay, dist/<overlay>.yaml, rendered from a release copy of config/
// whose images are pinned to the pushed digests; and the datumctl plugin
// archives goreleaser builds (.goreleaser.yaml).
package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/citycells/compute/internal/images"
)

// SourceURL is the repository the release is built from.
const SourceURL = images.SourceURL

// DefaultPlatforms are the platforms of every image index.
var DefaultPlatforms = []string{"linux/amd64", "linux/arm64"}

// Options say what to release and where.
type Options struct {
	// ModuleDir is the repository's root.
	ModuleDir string
	// Registry is the repository prefix the images are pushed under:
	// <Registry>/<binary>:<Version>.
	Registry string
	// Version and Revision are the release version (tag, label,
	// -X main.version) and its commit.
	Version, Revision string
	// Created is the commit's time (SOURCE_DATE_EPOCH).
	Created time.Time
	// Binaries of cmd/ to build images of.
	Binaries []string
	// Platforms of each index.
	Platforms []v1.Platform
	// Dist is where the bundles, SBOMs and the list of images go.
	Dist string
	// ConfigDir is the kustomize tree (config/); Overlays the overlays of
	// it to render (all when empty).
	ConfigDir string
	Overlays  []string
	// Kustomize is the kustomize binary.
	Kustomize string
	// Goreleaser, when set, builds the plugin archives first, with
	// GoreleaserArgs (default: release --snapshot --clean) and
	// GoreleaserEnv (added to the environment).
	Goreleaser     string
	GoreleaserArgs []string
	GoreleaserEnv  []string
	// Remote are the registry options (authentication, transport).
	Remote []remote.Option
	// Insecure allows a plain-HTTP registry (go-containerregistry already
	// speaks plain HTTP to localhost and 127.0.0.1).
	Insecure bool
	// Log receives progress, one line a step.
	Log io.Writer
}

// Image is one pushed image index.
type Image struct {
	Binary string
	// Ref is the index by digest.
	Ref name.Digest
	// Tag is <Registry>/<binary>:<Version>.
	Tag name.Tag
	// Platforms are the platforms it holds.
	Platforms []v1.Platform
	// SBOM is the SBOM artifact's digest in the same repository; SBOMPath
	// its copy under Dist.
	SBOM     v1.Hash
	SBOMPath string
}

// Result is what a release wrote.
type Result struct {
	Images  []Image
	Bundles []string
	// ImagesFile lists "<binary> <ref by digest>" per line.
	ImagesFile string
	// InstanceTypes is dist/instancetypes.yaml, config/instancetypes
	// rendered (empty when the tree has none).
	InstanceTypes string
}

func (o *Options) validate() error {
	var errs []error
	if o.Registry == "" {
		errs = append(errs, errors.New("a registry is required (--registry registry.example.com/citycells)"))
	} else if _, err := name.NewRepository(o.Registry + "/x"); err != nil {
		errs = append(errs, fmt.Errorf("registry %q: %w", o.Registry, err))
	}
	if o.Version == "" || o.Revision == "" {
		errs = append(errs, errors.New("version and revision are required"))
	}
	if o.Created.IsZero() {
		errs = append(errs, errors.New("created time is zero: pass the commit time (SOURCE_DATE_EPOCH)"))
	}
	if len(o.Binaries) == 0 || len(o.Platforms) == 0 {
		errs = append(errs, errors.New("at least one binary and one platform are required"))
	}
	if o.Dist == "" || o.ConfigDir == "" || o.Kustomize == "" || o.ModuleDir == "" {
		errs = append(errs, errors.New("module directory, dist, config directory and kustomize are required"))
	}
	return errors.Join(errs...)
}

func (o *Options) logf(format string, args ...any) {
	if o.Log != nil {
		_, _ = fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

// Run makes the release.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	overlays := o.Overlays
	if len(overlays) == 0 {
		var err error
		if overlays, err = Overlays(o.ConfigDir); err != nil {
			return nil, err
		}
	}
	// goreleaser first: --clean empties its dist directory.
	if o.Goreleaser != "" {
		args := o.GoreleaserArgs
		if len(args) == 0 {
			args = []string{"release", "--snapshot", "--clean"}
		}
		start := time.Now()
		cmd := exec.CommandContext(ctx, o.Goreleaser, args...)
		cmd.Dir = o.ModuleDir
		cmd.Env = append(os.Environ(), o.GoreleaserEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("goreleaser %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		o.logf("plugin archives: goreleaser %s (%s)", strings.Join(args, " "), time.Since(start).Round(time.Second))
	}
	work, err := os.MkdirTemp("", "compute-release-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(work) }()
	if err := os.MkdirAll(filepath.Join(o.Dist, "sbom"), 0o755); err != nil {
		return nil, err
	}

	res := &Result{}
	pins := make([]Pin, 0, len(o.Binaries))
	for _, b := range o.Binaries {
		img, err := o.publish(ctx, work, b)
		if err != nil {
			return nil, err
		}
		res.Images = append(res.Images, *img)
		pins = append(pins, Pin{Binary: b, Ref: img.Ref})
	}
	var list strings.Builder
	for _, img := range res.Images {
		fmt.Fprintf(&list, "%s %s\n", img.Binary, img.Ref.String())
	}
	res.ImagesFile = filepath.Join(o.Dist, "images.txt")
	if err := os.WriteFile(res.ImagesFile, []byte(list.String()), 0o644); err != nil {
		return nil, err
	}
	if res.Bundles, err = RenderBundles(ctx, o.Kustomize, o.ConfigDir, o.Dist, overlays, pins); err != nil {
		return nil, err
	}
	// The InstanceType catalog: no images, applied to the hub and every
	// project plane after the bundles (docs/install.md).
	if _, err := os.Stat(filepath.Join(o.ConfigDir, "instancetypes", "kustomization.yaml")); err == nil {
		out, err := kustomizeRun(ctx, o.Kustomize, filepath.Join(o.ConfigDir, "instancetypes"), "build", ".")
		if err != nil {
			return nil, fmt.Errorf("kustomize build config/instancetypes: %w\n%s", err, out)
		}
		res.InstanceTypes = filepath.Join(o.Dist, "instancetypes.yaml")
		if err := os.WriteFile(res.InstanceTypes, out, 0o644); err != nil {
			return nil, err
		}
	}
	for _, b := range append(slices.Clone(res.Bundles), res.InstanceTypes) {
		if b != "" {
			o.logf("bundle %s", b)
		}
	}
	return res, nil
}

// publish builds binary for every platform, pushes the index and its SBOM.
func (o *Options) publish(ctx context.Context, work, binary string) (*Image, error) {
	start := time.Now()
	spec := func(bin string, p v1.Platform) images.Spec {
		return images.Spec{Name: binary, Binary: bin, Platform: p, Version: o.Version, Revision: o.Revision,
			Source: images.SourceURL, Created: o.Created}
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	adds := make([]mutate.IndexAddendum, 0, len(o.Platforms))
	built := make([]BuiltBinary, 0, len(o.Platforms))
	for _, p := range o.Platforms {
		bin, err := images.GoBuild(ctx, o.ModuleDir, work, binary, p, o.Version, o.Revision)
		if err != nil {
			return nil, err
		}
		if err := images.CheckStatic(bin); err != nil {
			return nil, err
		}
		img, err := images.Build(spec(bin, p))
		if err != nil {
			return nil, err
		}
		plat := p
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &plat}})
		built = append(built, BuiltBinary{Path: bin, Platform: p})
	}
	idx = mutate.AppendManifests(idx, adds...)
	idx = mutate.Annotations(idx, spec("", v1.Platform{}).Labels()).(v1.ImageIndex)
	var nameOpts []name.Option
	if o.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	tag, err := name.NewTag(fmt.Sprintf("%s/%s:%s", o.Registry, binary, o.Version), nameOpts...)
	if err != nil {
		return nil, fmt.Errorf("invalid tag for %s: %w", binary, err)
	}
	if err := remote.WriteIndex(tag, idx, append([]remote.Option{remote.WithContext(ctx)}, o.Remote...)...); err != nil {
		return nil, fmt.Errorf("failed to push %s: %w", tag, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return nil, err
	}
	size, err := idx.Size()
	if err != nil {
		return nil, err
	}
	doc, err := SBOM(binary, o.Version, digest, o.Created, built)
	if err != nil {
		return nil, err
	}
	data, err := doc.JSON()
	if err != nil {
		return nil, err
	}
	sbomPath := filepath.Join(o.Dist, "sbom", binary+".spdx.json")
	if err := os.WriteFile(sbomPath, data, 0o644); err != nil {
		return nil, err
	}
	sbom, err := PushReferrer(tag.Context(), v1.Descriptor{MediaType: types.OCIImageIndex, Digest: digest, Size: size},
		SBOMMediaType, binary+".spdx.json", data,
		map[string]string{images.LabelCreated: o.Created.UTC().Format(time.RFC3339)},
		append([]remote.Option{remote.WithContext(ctx)}, o.Remote...)...)
	if err != nil {
		return nil, err
	}
	img := &Image{
		Binary:    binary,
		Ref:       tag.Context().Digest(digest.String()),
		Tag:       tag,
		Platforms: o.Platforms,
		SBOM:      sbom,
		SBOMPath:  sbomPath,
	}
	o.logf("%s %s (%d platforms), SBOM %s, %s", binary, img.Ref, len(o.Platforms), sbom, time.Since(start).Round(time.Second))
	return img, nil
}
