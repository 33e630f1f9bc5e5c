// Package images builds compute's container images without a Docker daemon,
// with go-containerregistry: a static Go binary on top of a tiny root file
// system (CA certificates, a non-root user, /tmp), no shell, no package
// manager. The same source gives the same digest: every timestamp is the
// commit's time, every file is owned by root with a fixed mode, and entries
// are written in sorted order.
//
// The root file system is described once, by RootFS; the image layers
// (Build) and the staging directory the Dockerfile copies from (Stage) are
// both written from it, which is what keeps the Dockerfile in step with
// `make images`.
package images

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The non-root user every image runs as (distroless' "nonroot").
const (
	UID      = 65532
	GID      = 65532
	UserName = "nonroot"
)

// User is the image's USER: numeric, so the kubelet can check
// runAsNonRoot without reading /etc/passwd.
var User = fmt.Sprintf("%d:%d", UID, GID)

// CACertificatesPath is where the CA bundle lives: the first file Go's
// crypto/x509 (and most other TLS stacks) look for on Linux.
const CACertificatesPath = "etc/ssl/certs/ca-certificates.crt"

// Labels keys written on every image (OCI annotations spec, pre-defined
// annotation keys).
const (
	LabelTitle    = "org.opencontainers.image.title"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelSource   = "org.opencontainers.image.source"
	LabelCreated  = "org.opencontainers.image.created"
)

// LabelKeys are the label keys every image carries, sorted.
var LabelKeys = []string{LabelCreated, LabelRevision, LabelSource, LabelTitle, LabelVersion}

// File is one entry of an image's file system.
type File struct {
	// Path is relative to the root, without a leading slash.
	Path string
	// Dir marks a directory; Data is then empty.
	Dir bool
	// Mode are the permission bits.
	Mode int64
	// Data is a regular file's content.
	Data []byte
}

// Spec describes one image.
type Spec struct {
	// Name is the binary's name; it is also the entrypoint /<Name>.
	Name string
	// Binary is the path of the built, static binary.
	Binary string
	// Platform is the binary's platform.
	Platform v1.Platform
	// Version and Revision are the release version and the commit.
	Version, Revision string
	// Source is the repository URL.
	Source string
	// Created is the commit's time: the time of every file and of the image.
	Created time.Time
}

// Labels are the image's labels for s.
func (s Spec) Labels() map[string]string {
	return map[string]string{
		LabelTitle:    s.Name,
		LabelVersion:  s.Version,
		LabelRevision: s.Revision,
		LabelSource:   s.Source,
		LabelCreated:  s.Created.UTC().Format(time.RFC3339),
	}
}

// Entrypoint is the image's entrypoint.
func (s Spec) Entrypoint() []string { return []string{"/" + s.Name} }

// Validate reports every problem with s at once.
func (s Spec) Validate() error {
	var errs []error
	if s.Name == "" || strings.ContainsAny(s.Name, "/ ") {
		errs = append(errs, fmt.Errorf("name %q must be a plain binary name", s.Name))
	}
	if s.Binary == "" {
		errs = append(errs, errors.New("binary path is empty"))
	}
	if s.Platform.OS == "" || s.Platform.Architecture == "" {
		errs = append(errs, fmt.Errorf("platform %q needs an OS and an architecture (linux/amd64)", s.Platform.String()))
	}
	if s.Version == "" {
		errs = append(errs, errors.New("version is empty"))
	}
	if s.Revision == "" {
		errs = append(errs, errors.New("revision is empty"))
	}
	if s.Created.IsZero() {
		errs = append(errs, errors.New("created time is zero: pass the commit time (SOURCE_DATE_EPOCH)"))
	}
	return errors.Join(errs...)
}

// CACertificates returns the PEM bundle of the Mozilla (NSS) roots shipped in
// golang.org/x/crypto/x509roots/fallback, pinned in go.mod and checked by
// go.sum: the same bundle on every machine, offline from the module cache.
// Roots NSS trusts only with a distrust-after date are left out, since a PEM
// file cannot carry that constraint.
func CACertificates() ([]byte, error) {
	var buf bytes.Buffer
	n := 0
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if _, err := x509.ParseCertificate(root.Certificate); err != nil {
			return nil, fmt.Errorf("failed to parse a root of the CA bundle: %w", err)
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, errors.New("the CA bundle is empty")
	}
	return buf.Bytes(), nil
}

// BaseFiles are the files every image holds besides its binary: the CA
// bundle, passwd and group naming root and nonroot (whose home does not
// exist: nothing in the image writes there) and a sticky /tmp. Every file is
// owned by root, so the Dockerfile's plain COPY reproduces them.
func BaseFiles() ([]File, error) {
	certs, err := CACertificates()
	if err != nil {
		return nil, err
	}
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n" +
		fmt.Sprintf("%s:x:%d:%d:%s:/nonexistent:/sbin/nologin\n", UserName, UID, GID, UserName)
	group := "root:x:0:\n" + fmt.Sprintf("%s:x:%d:\n", UserName, GID)
	return []File{
		{Path: "etc", Dir: true, Mode: 0o755},
		{Path: "etc/group", Mode: 0o644, Data: []byte(group)},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Path: "etc/ssl", Dir: true, Mode: 0o755},
		{Path: "etc/ssl/certs", Dir: true, Mode: 0o755},
		{Path: CACertificatesPath, Mode: 0o644, Data: certs},
		{Path: "tmp", Dir: true, Mode: 0o1777},
	}, nil
}

// BinaryFiles is the layer holding the binary at /<name>.
func BinaryFiles(s Spec) ([]File, error) {
	data, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, fmt.Errorf("failed to read the %s binary: %w", s.Name, err)
	}
	return []File{{Path: s.Name, Mode: 0o755, Data: data}}, nil
}

// RootFS is the image's file system, one slice of files per layer: the base
// layer first, then the binary.
func RootFS(s Spec) ([][]File, error) {
	base, err := BaseFiles()
	if err != nil {
		return nil, err
	}
	bin, err := BinaryFiles(s)
	if err != nil {
		return nil, err
	}
	return [][]File{base, bin}, nil
}

// Build assembles the image for s.
func Build(s Spec) (v1.Image, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("invalid image %q: %w", s.Name, err)
	}
	layers, err := RootFS(s)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: s.Created.UTC()}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	comments := []string{"base: CA certificates, passwd, group, /tmp", "binary: /" + s.Name}
	for i, files := range layers {
		data, err := tarFiles(files, s.Created)
		if err != nil {
			return nil, err
		}
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data)), nil
		}, tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return nil, fmt.Errorf("failed to make layer %d of %s: %w", i, s.Name, err)
		}
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:   layer,
			History: v1.History{Created: created, CreatedBy: "compute images", Comment: comments[i]},
		})
		if err != nil {
			return nil, fmt.Errorf("failed to append layer %d of %s: %w", i, s.Name, err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture, cf.Variant = s.Platform.OS, s.Platform.Architecture, s.Platform.Variant
	cf.Author = ""
	cf.Config = v1.Config{
		Entrypoint: s.Entrypoint(),
		User:       User,
		WorkingDir: "/",
		Env:        []string{"SSL_CERT_FILE=/" + CACertificatesPath},
		Labels:     s.Labels(),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("failed to set the config of %s: %w", s.Name, err)
	}
	return img, nil
}

// tarFiles writes files as a tar stream in path order, every entry at mtime.
func tarFiles(files []File, mtime time.Time) ([]byte, error) {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range sorted {
		hdr := &tar.Header{
			Name:    f.Path,
			Mode:    f.Mode,
			Uname:   "root",
			Gname:   "root",
			ModTime: mtime.UTC(),
			Format:  tar.FormatPAX,
		}
		if f.Dir {
			hdr.Typeflag, hdr.Name = tar.TypeDir, f.Path+"/"
		} else {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("failed to write %s: %w", f.Path, err)
		}
		if !f.Dir {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("failed to write %s: %w", f.Path, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Stage writes s's file system into dir (dir/<path>), for the Dockerfile to
// COPY from; COPY makes every file root's, as in the layers.
func Stage(s Spec, dir string) error {
	layers, err := RootFS(s)
	if err != nil {
		return err
	}
	for _, files := range layers {
		for _, f := range files {
			p := filepath.Join(dir, filepath.FromSlash(f.Path))
			if f.Dir {
				if err := os.MkdirAll(p, 0o755); err != nil {
					return err
				}
				if err := os.Chmod(p, fs.FileMode(f.Mode&0o777)|modeBits(f.Mode)); err != nil {
					return err
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, f.Data, fs.FileMode(f.Mode)); err != nil {
				return fmt.Errorf("failed to stage %s: %w", path.Join("/", f.Path), err)
			}
		}
	}
	return nil
}

// modeBits maps the sticky/setuid/setgid bits of a tar mode to fs bits.
func modeBits(m int64) fs.FileMode {
	var out fs.FileMode
	if m&0o1000 != 0 {
		out |= fs.ModeSticky
	}
	return out
}

// Binaries are the binaries that run in a cluster and get an image.
var Binaries = []string{"compute-manager", "compute-quota"}

// DefaultRepository is the repository images are tagged in.
const DefaultRepository = "ghcr.io/citycells"

// SourceURL is the repository of the source, for the source label.
const SourceURL = "https://github.com/citycells/compute"
