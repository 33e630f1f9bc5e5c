//go:build linux

package cmd

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/citycells/compute/internal/exitcode"
	"github.com/citycells/compute/internal/local/platform"
)

// registryOptions are the options of the hidden `registry` command.
type registryOptions struct {
	serverOptions
	addr, dir string
}

// newRegistryCommand builds the hidden command that serves the local OCI
// registry.
func newRegistryCommand(g *globalOptions) *cobra.Command {
	o := &registryOptions{serverOptions: serverOptions{globalOptions: g}}
	cmd := newServerCommand(platform.RegistryCommandName, "Serve the local OCI registry (run by compute-local up)", o)
	cmd.Flags().StringVar(&o.addr, "addr", "", "host:port to listen on")
	cmd.Flags().StringVar(&o.dir, "dir", "", "directory of the registry's blobs")
	return cmd
}

// Validate requires both flags.
func (o *registryOptions) Validate() error {
	if o.addr == "" || o.dir == "" {
		return exitcode.UsageErrorf("--addr and --dir are required")
	}
	return nil
}

// Run serves until SIGTERM.
func (o *registryOptions) Run(ctx context.Context) error {
	return serveUntilSignal(ctx, func(ctx context.Context) error { return platform.ServeRegistry(ctx, o.addr, o.dir) })
}

// imagePushOptions are the options of `compute-local image push`.
type imagePushOptions struct {
	*globalOptions
	path, tag, registry string
}

// newImageCommand builds `compute-local image`.
func newImageCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Load images into the platform's registry",
	}
	o := &imagePushOptions{globalOptions: g}
	push := &cobra.Command{
		Use:   "push PATH NAME:TAG",
		Short: "Push an OCI image layout directory or a docker-save tarball to the platform's registry",
		Long: `Push an image to the local platform's registry, where the real nodes pull from:
PATH is an OCI image layout directory (index.json and blobs/, as written by
crane, skopeo, buildah or ko) or a tarball from docker save. The image is
then <registry>/NAME:TAG, <registry> being $` + platform.EnvRegistry + ` (compute-local env).`,
		Example: `  compute-local image push ./out/myapp-oci myapp:1
  datumctl-compute deploy myapp --image "$` + platform.EnvRegistry + `/myapp:1" --city DFW --port http:8080`,
		Args: cobra.ExactArgs(2),
		RunE: runE(o),
	}
	cmd.AddCommand(push)
	return cmd
}

// Complete reads the arguments and the registry's address.
func (o *imagePushOptions) Complete(_ *cobra.Command, args []string) error {
	o.path, o.tag = args[0], args[1]
	dir, err := o.resolveStateDir()
	if err != nil {
		return err
	}
	st, err := platform.ReadState(dir)
	if err != nil {
		return err
	}
	if st.Registry == "" {
		return fmt.Errorf("the platform in %s runs no registry (it has no real node): start it with `compute-local up --nodes DFW`", dir)
	}
	o.registry = st.Registry
	return nil
}

// Validate checks the path exists.
func (o *imagePushOptions) Validate() error {
	if _, err := os.Stat(o.path); err != nil {
		return exitcode.UsageErrorf("%v", err)
	}
	return nil
}

// Run pushes the image.
func (o *imagePushOptions) Run(ctx context.Context) error {
	img, err := platform.LoadImage(o.path)
	if err != nil {
		return err
	}
	if err := platform.PushImage(ctx, o.registry, o.tag, img); err != nil {
		return err
	}
	fprintf(o.streams.Out, "pushed %s/%s\n", o.registry, o.tag)
	return nil
}
