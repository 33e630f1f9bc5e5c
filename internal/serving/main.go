package serving

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/citycells/compute/internal/buildinfo"
)

// ProgramOptions are a program's options as Main handles them: bound to
// its flags, completed from what was given, validated before it runs.
type ProgramOptions interface {
	// AddFlags binds the options to a flag set.
	AddFlags(fs *pflag.FlagSet)
	// Complete fills what the flags left to defaults or the environment.
	Complete(fs *pflag.FlagSet) error
	// Validate reports every configuration error at once.
	Validate() error
}

// Program is one of compute's managers as Main runs it.
type Program[O ProgramOptions] struct {
	// Name names the program in its flag set and its messages.
	Name string
	// Options are the defaults the flags change.
	Options O
	// Run runs the program until ctx ends (SIGTERM or SIGINT).
	Run func(ctx context.Context, o O) error
	// InvalidExit is the exit code when Complete or Validate refuses the
	// options.
	InvalidExit int
	// CompleteIsValidation reports Complete's errors as invalid
	// configuration, like Validate's, rather than on their own.
	CompleteIsValidation bool
	// Version and Commit are what the build stamped into the binary
	// (-X main.version, -X main.commit); buildinfo.Resolve completes them
	// and Main exports them as compute_build_info.
	Version, Commit string
}

// Main parses args into p's options and the logging flags (zap's), and
// runs p with the logger set, the Go runtime's memory limit set from the
// container's (SetMemoryLimit) and a context that ends on SIGTERM or
// SIGINT. It returns the exit code: 0 after --help or a clean stop, 2 for
// flags that do not parse, p.InvalidExit for options p refuses, 1 when p
// fails; every error is written to stderr, prefixed with p's name.
func Main[O ProgramOptions](p Program[O], args []string, stderr io.Writer) int {
	fs := pflag.NewFlagSet(p.Name, pflag.ContinueOnError)
	p.Options.AddFlags(fs)
	zapOpts := zap.Options{}
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	zapOpts.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		_, _ = fmt.Fprintf(stderr, "%s: %v\nRun %s --help for usage.\n", p.Name, err, p.Name)
		return 2
	}
	if err := p.Options.Complete(fs); err != nil {
		if p.CompleteIsValidation {
			_, _ = fmt.Fprintf(stderr, "%s: invalid configuration:\n%v\n", p.Name, err)
		} else {
			_, _ = fmt.Fprintf(stderr, "%s: %v\n", p.Name, err)
		}
		return p.InvalidExit
	}
	if err := p.Options.Validate(); err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: invalid configuration:\n%v\n", p.Name, err)
		return p.InvalidExit
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	SetMemoryLimit(ctrl.Log.WithName(p.Name), "/sys/fs/cgroup")
	buildinfo.Register(buildinfo.Resolve(p.Version, p.Commit))
	if err := p.Run(ctrl.SetupSignalHandler(), p.Options); err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", p.Name, err)
		return 1
	}
	return 0
}
