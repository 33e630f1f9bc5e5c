package images

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Output names where one image was written.
type Output struct {
	// Name is the binary's name.
	Name string
	// Digest is the image manifest's digest.
	Digest v1.Hash
	// Layout is the OCI image layout directory (crane, skopeo, ctr import
	// of its tar, docker load of recent Dockers).
	Layout string
	// Tarball is the docker-archive file (docker load, ctr image import,
	// kind load image-archive, crane push).
	Tarball string
	// Tag is the reference the tarball carries.
	Tag string
}

// Write writes img as an OCI layout at dir/<name> and a docker archive at
// dir/<name>.tar tagged repository/<name>:<version>, replacing earlier ones.
func Write(dir, repository string, s Spec, img v1.Image) (Output, error) {
	tag, err := name.NewTag(fmt.Sprintf("%s/%s:%s", repository, s.Name, s.Version))
	if err != nil {
		return Output{}, fmt.Errorf("invalid tag for %s (repository %q, version %q): %w", s.Name, repository, s.Version, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return Output{}, err
	}
	out := Output{
		Name:    s.Name,
		Digest:  digest,
		Layout:  filepath.Join(dir, s.Name),
		Tarball: filepath.Join(dir, s.Name+".tar"),
		Tag:     tag.String(),
	}
	if err := os.RemoveAll(out.Layout); err != nil {
		return Output{}, err
	}
	p, err := layout.Write(out.Layout, empty.Index)
	if err != nil {
		return Output{}, fmt.Errorf("failed to write the OCI layout of %s: %w", s.Name, err)
	}
	if err := p.AppendImage(img, layout.WithPlatform(s.Platform), layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": s.Version,
		"io.containerd.image.name":          tag.String(),
	})); err != nil {
		return Output{}, fmt.Errorf("failed to write %s into its OCI layout: %w", s.Name, err)
	}
	if err := tarball.WriteToFile(out.Tarball, tag, img); err != nil {
		return Output{}, fmt.Errorf("failed to write the tarball of %s: %w", s.Name, err)
	}
	return out, nil
}

// CheckStatic fails unless the ELF binary at path is statically linked (no
// program interpreter, no shared libraries): the images have no libc.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not an ELF binary: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (it has a program interpreter): build it with CGO_ENABLED=0", path)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return fmt.Errorf("failed to read the libraries of %s: %w", path, err)
	}
	if len(libs) > 0 {
		return fmt.Errorf("%s needs shared libraries %v: build it with CGO_ENABLED=0", path, libs)
	}
	return nil
}
