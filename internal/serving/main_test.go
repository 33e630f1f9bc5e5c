package serving

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// fakeOptions fail where told to.
type fakeOptions struct {
	name        string
	completeErr error
	validateErr error
}

func (o *fakeOptions) AddFlags(fs *pflag.FlagSet) { fs.StringVar(&o.name, "name", "", "A name.") }

func (o *fakeOptions) Complete(*pflag.FlagSet) error { return o.completeErr }

func (o *fakeOptions) Validate() error { return o.validateErr }

func TestMainRefusesBeforeRunning(t *testing.T) {
	tests := map[string]struct {
		args                 []string
		options              fakeOptions
		completeIsValidation bool
		wantCode             int
		wantStderr           string
	}{
		"help exits 0 and runs nothing": {
			args: []string{"--help"}, wantCode: 0,
		},
		"a flag that does not parse is a usage error": {
			args: []string{"--nope"}, wantCode: 2,
			wantStderr: "prog: unknown flag: --nope\nRun prog --help for usage.\n",
		},
		"a Complete error is reported on its own": {
			options: fakeOptions{completeErr: errors.New("bad env")}, wantCode: 7,
			wantStderr: "prog: bad env\n",
		},
		"a Complete error may read as invalid configuration": {
			options: fakeOptions{completeErr: errors.New("bad env")}, completeIsValidation: true, wantCode: 7,
			wantStderr: "prog: invalid configuration:\nbad env\n",
		},
		"a Validate error is invalid configuration": {
			options: fakeOptions{validateErr: errors.New("--name is required")}, wantCode: 7,
			wantStderr: "prog: invalid configuration:\n--name is required\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var stderr strings.Builder
			o := tc.options
			code := Main(Program[*fakeOptions]{
				Name:    "prog",
				Options: &o,
				Run: func(context.Context, *fakeOptions) error {
					t.Fatal("Run was called")
					return nil
				},
				InvalidExit:          7,
				CompleteIsValidation: tc.completeIsValidation,
			}, tc.args, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d", code, tc.wantCode)
			}
			if tc.wantStderr != "" && stderr.String() != tc.wantStderr {
				t.Errorf("stderr = %q, want %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}
