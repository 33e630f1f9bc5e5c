// Package release_test is the release dry run: hack/release's pipeline
// (internal/release) builds a multi-arch image index with its SBOM, pushes
// both to a local in-memory registry (go-containerregistry's pkg/registry),
// builds the plugin archives with goreleaser and renders one bundle per
// overlay, which are then applied to the real planes they are meant for.
//
// To stay light on CPU it builds one small binary (compute-hello) for
// linux/amd64 and linux/arm64, and the plugin archive of this machine's
// platform only; `make release` builds every image binary and every
// archive with the same code (and cmd/datumctl-compute's release test
// checks the full goreleaser matrix).
package release_test

import (
	"context"
	"os"
	"testing"

	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/test/integration/fixtures"
)

var env *fixtures.Env

const (
	project = "project"
	hub     = "hub"
	cell    = "cell"
)

func TestMain(m *testing.M) {
	os.Exit(fixtures.Run(m, fixtures.Input{
		Planes: []planes.PlaneSpec{
			{Name: project, CRDDirs: []string{fixtures.CRDDir(), fixtures.ExternalCRDDir()}},
			{Name: hub, CRDDirs: []string{fixtures.CRDDir()}},
			{Name: cell, CRDDirs: []string{fixtures.CRDDir()}},
		},
		KarmadaHubs: []string{hub},
		Setup: func(_ context.Context, e *fixtures.Env) error {
			env = e
			return nil
		},
	}))
}
