package images

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// GoBuildFlags are the flags every image binary is built with, here and in
// the Dockerfile: no paths of the build machine, no VCS stamping (the
// revision travels in -X and the labels instead, so a build from a tarball
// of the source gives the same bytes), no build ID, stripped.
func GoBuildFlags(version, revision string) []string {
	return []string{
		"-trimpath",
		"-buildvcs=false",
		"-ldflags=-s -w -buildid= -X main.version=" + version + " -X main.commit=" + revision,
	}
}

// GoBuild builds ./cmd/<name> of the module in moduleDir for platform into
// outDir and returns the binary's path. CGO is off, so the binary is static.
func GoBuild(ctx context.Context, moduleDir, outDir, name string, platform v1.Platform, version, revision string) (string, error) {
	out := filepath.Join(outDir, fmt.Sprintf("%s-%s-%s", name, platform.OS, platform.Architecture))
	args := append([]string{"build"}, GoBuildFlags(version, revision)...)
	args = append(args, "-o", out, "./cmd/"+name)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+platform.OS, "GOARCH="+platform.Architecture, "GOFLAGS=")
	if platform.Variant != "" && platform.Architecture == "arm" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(platform.Variant, "v"))
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/%s for %s failed: %w\n%s", name, platform.String(), err, b)
	}
	return out, nil
}
