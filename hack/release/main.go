// Command release builds and publishes a compute release (internal/release):
// one OCI image index per binary (linux/amd64 and linux/arm64) pushed to
// --registry with an SPDX SBOM attached as an OCI artifact referring to it,
// the plugin archives goreleaser builds, and dist/<overlay>.yaml for every
// overlay with the images pinned to the pushed digests.
//
//	go run ./hack/release --registry registry.example.com/citycells \
//	  --version v0.1.0 --revision $(git rev-parse HEAD) --created $(git log -1 --format=%ct) \
//	  --kustomize $(bash hack/tools.sh bin kustomize) --goreleaser $(bash hack/tools.sh bin goreleaser)
//
// Credentials come from the Docker config (~/.docker/config.json, as
// `docker login` or `crane auth login` write it).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/citycells/compute/internal/images"
	"github.com/citycells/compute/internal/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage error")

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	registry := fs.String("registry", "", "Repository prefix to push to: images go to <registry>/<binary>:<version> (required).")
	binaries := fs.String("binaries", strings.Join(images.Binaries, ","), "Comma-separated binaries of ./cmd to build images of.")
	platforms := fs.String("platforms", strings.Join(release.DefaultPlatforms, ","), "Comma-separated platforms of every image index.")
	version := fs.String("version", "", "Release version (tag, label, -X main.version).")
	revision := fs.String("revision", "", "Commit the release is built from.")
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "Commit time in Unix seconds ($SOURCE_DATE_EPOCH).")
	dist := fs.String("dist", "dist", "Directory of the bundles, SBOMs and images.txt (goreleaser's dist).")
	config := fs.String("config", "config", "The kustomize tree; its overlays/ are rendered.")
	overlays := fs.String("overlays", "", "Comma-separated overlays to render (default: every one).")
	kustomize := fs.String("kustomize", "", "The kustomize binary (bash hack/tools.sh bin kustomize).")
	goreleaser := fs.String("goreleaser", "", "The goreleaser binary; empty skips the plugin archives.")
	goreleaserArgs := fs.String("goreleaser-args", "release --snapshot --clean", "goreleaser's arguments (a tagged release: 'release --clean --skip=publish,announce').")
	insecure := fs.Bool("insecure", false, "Allow a plain-HTTP registry (localhost and 127.0.0.1 are plain HTTP already).")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	secs, err := strconv.ParseInt(*created, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: --created %q must be Unix seconds (git log -1 --format=%%ct)", errUsage, *created)
	}
	platformList := strings.Split(*platforms, ",")
	plats := make([]v1.Platform, 0, len(platformList))
	for _, p := range platformList {
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			return fmt.Errorf("%w: --platforms %q: %w", errUsage, p, err)
		}
		plats = append(plats, *plat)
	}
	moduleDir, err := os.Getwd()
	if err != nil {
		return err
	}
	opts := release.Options{
		ModuleDir: moduleDir,
		Registry:  strings.TrimSuffix(*registry, "/"),
		Version:   *version, Revision: *revision,
		Created:        time.Unix(secs, 0).UTC(),
		Binaries:       strings.Split(*binaries, ","),
		Platforms:      plats,
		Dist:           *dist,
		ConfigDir:      *config,
		Kustomize:      *kustomize,
		Goreleaser:     *goreleaser,
		GoreleaserArgs: strings.Fields(*goreleaserArgs),
		Remote:         []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)},
		Log:            os.Stdout,
	}
	if *overlays != "" {
		opts.Overlays = strings.Split(*overlays, ",")
	}
	if *insecure {
		opts.Insecure = true
	}
	start := time.Now()
	res, err := release.Run(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Printf("released %d images in %s; %s lists them\n", len(res.Images), time.Since(start).Round(time.Second), res.ImagesFile)
	return nil
}
