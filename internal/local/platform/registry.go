//go:build linux

package platform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/citycells/compute/internal/images"
	"github.com/citycells/compute/internal/planes"
)

// componentRegistry is the local OCI registry's component name.
const componentRegistry = "registry"

// The images Up pushes to the local registry, built offline from
// cmd/compute-hello: the demo workload and the pod sandbox image of the
// real nodes.
const (
	// DemoImage is the demo's repository and tag in the local registry.
	DemoImage = "hello:1"
	// pauseImage is the sandbox ("pause") image the nodes' containerd runs.
	pauseImage = "pause:1"
	// demoProgram is the command the images are built from.
	demoProgram = "compute-hello"
)

// ServeRegistry serves an OCI distribution registry on addr until ctx ends,
// keeping blobs under dir (manifests are held in memory: a registry that
// restarts has lost its tags, and `up` or `compute-local image push` pushes
// them again).
func ServeRegistry(ctx context.Context, addr, dir string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("the registry cannot listen on %s: %w", addr, err)
	}
	return serveRegistry(ctx, ln, dir)
}

// serveRegistry serves the registry on ln until ctx ends.
func serveRegistry(ctx context.Context, ln net.Listener, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("failed to create the registry's blob directory: %w", err)
	}
	srv := &http.Server{
		Handler: registry.New(
			registry.WithBlobHandler(registry.NewDiskBlobHandler(dir)),
			registry.Logger(log.New(io.Discard, "", 0)),
		),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// startRegistry starts the local registry: as a process of its own when the
// platform is detached (RegistryCommand), else inside this process, and
// records its address.
func (p *Platform) startRegistry(ctx context.Context) error {
	ports, err := planes.FreePorts(1)
	if err != nil {
		return err
	}
	addr := hostPort(ports[0])
	dir := filepath.Join(p.cfg.StateDir, "registry")
	if len(p.cfg.RegistryCommand) > 0 {
		args := append([]string{}, p.cfg.RegistryCommand[1:]...)
		args = append(args, "--addr="+addr, "--dir="+dir)
		if err := p.startComponent(ctx, planes.ComponentSpec{
			Name: componentRegistry, Binary: p.cfg.RegistryCommand[0], Args: args, Port: ports[0],
		}, "http://"+addr+"/v2/", false); err != nil {
			return err
		}
	} else {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("the registry cannot listen on %s: %w", addr, err)
		}
		rctx, cancel := context.WithCancel(context.Background())
		p.stopRegistry = cancel
		go func() { _ = serveRegistry(rctx, ln, dir) }()
	}
	p.mu.Lock()
	p.state.Registry = addr
	p.mu.Unlock()
	return p.saveState()
}

// pushDemoImages builds cmd/compute-hello for this machine and pushes it to
// the local registry as the demo image and as the sandbox image.
func (p *Platform) pushDemoImages(ctx context.Context) error {
	began := time.Now()
	plat := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	bin, err := images.GoBuild(ctx, p.repo, filepath.Join(p.cfg.StateDir, "bin"), demoProgram, plat, "local", "local")
	if err != nil {
		return err
	}
	for _, ref := range []string{DemoImage, pauseImage} {
		repo, _, _ := strings.Cut(ref, ":")
		img, err := images.Build(images.Spec{
			Name: repo, Binary: bin, Platform: plat, Version: "local", Revision: "local",
			Source: "https://github.com/citycells/compute", Created: time.Unix(0, 0).UTC(),
		})
		if err != nil {
			return fmt.Errorf("failed to build the %s image: %w", ref, err)
		}
		if err := PushImage(ctx, p.State().Registry, ref, img); err != nil {
			return err
		}
	}
	p.progress.linef("registry %s serving %s/%s (the demo) and %s/%s (%s)",
		p.State().Registry, p.State().Registry, DemoImage, p.State().Registry, pauseImage, since(began))
	return nil
}

// PushImage pushes img to the registry at addr (host:port, plain HTTP) as
// ref (repository:tag).
func PushImage(ctx context.Context, addr, ref string, img v1.Image) error {
	tag, err := name.NewTag(addr+"/"+ref, name.Insecure)
	if err != nil {
		return fmt.Errorf("invalid image reference %q: use repository:tag, like myapp:1", ref)
	}
	if err := remote.Write(tag, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("failed to push %s: %w", tag, err)
	}
	return nil
}

// LoadImage reads an image from an OCI image layout directory (its first
// image) or from a `docker save` tarball.
func LoadImage(path string) (v1.Image, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		img, err := tarball.ImageFromPath(path, nil)
		if err != nil {
			return nil, fmt.Errorf("%s is not a docker image archive (docker save): %w", path, err)
		}
		return img, nil
	}
	idx, err := layout.ImageIndexFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("%s is not an OCI image layout (index.json, blobs/): %w", path, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("failed to read the index of %s: %w", path, err)
	}
	for _, d := range m.Manifests {
		if d.MediaType.IsImage() {
			return idx.Image(d.Digest)
		}
		if d.MediaType.IsIndex() {
			inner, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, err
			}
			return imageFor(inner, path)
		}
	}
	return nil, fmt.Errorf("%s holds no image", path)
}

// imageFor returns the image of an index for this machine's platform.
func imageFor(idx v1.ImageIndex, path string) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform == nil || d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("%s holds no image for linux/%s", path, runtime.GOARCH)
}
