// Command images builds compute's container images without a Docker daemon
// (internal/images): one image per binary that runs in a cluster, written
// under --out as an OCI layout directory and a docker-archive tarball.
//
//	go run ./hack/images --version v0.1.0 --revision $(git rev-parse HEAD) --created $(git log -1 --format=%ct)
//
// With --stage DIR it writes each image's file system into DIR/<binary>/
// instead, for the Dockerfile to COPY: the Dockerfile packs exactly what
// `make images` packs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/citycells/compute/internal/images"
)

func main() {
	os.Exit(exitCode())
}

// exitCode runs the command and maps its error to an exit code: 2 for
// usage, 1 for any other failure.
func exitCode() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

var errUsage = errors.New("usage error")

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	out := fs.String("out", "bin/images", "Directory the images are written to.")
	stage := fs.String("stage", "", "Write each image's file system to DIR/<binary>/ instead of building images (the Dockerfile's build stage).")
	binaries := fs.String("binaries", strings.Join(images.Binaries, ","), "Comma-separated binaries of ./cmd to package.")
	platform := fs.String("platform", "linux/"+runtime.GOARCH, "Platform of the images, os/arch[/variant].")
	version := fs.String("version", "", "Release version (label, tag and -X main.version).")
	revision := fs.String("revision", "", "Commit the images are built from (label and -X main.commit).")
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "Commit time in Unix seconds: the time of every file and of the image ($SOURCE_DATE_EPOCH).")
	repository := fs.String("repository", images.DefaultRepository, "Repository the tarballs are tagged in.")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	plat, err := v1.ParsePlatform(*platform)
	if err != nil {
		return fmt.Errorf("%w: --platform %q: %w", errUsage, *platform, err)
	}
	secs, err := strconv.ParseInt(*created, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: --created %q must be Unix seconds (git log -1 --format=%%ct)", errUsage, *created)
	}
	moduleDir, err := os.Getwd()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "compute-images-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()

	for _, name := range strings.Split(*binaries, ",") {
		start := time.Now()
		bin, err := images.GoBuild(ctx, moduleDir, work, name, *plat, *version, *revision)
		if err != nil {
			return err
		}
		if err := images.CheckStatic(bin); err != nil {
			return err
		}
		spec := images.Spec{
			Name: name, Binary: bin, Platform: *plat,
			Version: *version, Revision: *revision, Source: images.SourceURL,
			Created: time.Unix(secs, 0).UTC(),
		}
		if *stage != "" {
			if err := images.Stage(spec, filepath.Join(*stage, name)); err != nil {
				return err
			}
			fmt.Printf("%s %s staged in %s\n", name, plat.String(), filepath.Join(*stage, name))
			continue
		}
		img, err := images.Build(spec)
		if err != nil {
			return err
		}
		o, err := images.Write(*out, *repository, spec, img)
		if err != nil {
			return err
		}
		fmt.Printf("%s %s %s\n  layout  %s\n  tarball %s (%s)\n  took %s\n",
			name, plat.String(), o.Digest, o.Layout, o.Tarball, o.Tag, time.Since(start).Round(time.Millisecond))
	}
	return nil
}
