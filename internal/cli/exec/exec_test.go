package exec

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/citycells/compute/internal/cli/cmdutil"
)

func TestArguments(t *testing.T) {
	for name, tc := range map[string]struct {
		args    []string
		wantErr string
		wantURL string
	}{
		"a command after --": {args: []string{"web-dfw-0", "--", "cat", "/etc/motd"},
			wantURL: "/p/apis/debug.compute.datumapis.com/v1alpha/namespaces/team/instances/web-dfw-0/exec?command=cat&command=%2Fetc%2Fmotd&stderr=true&stdout=true"},
		"an interactive shell in a container": {args: []string{"web-dfw-0", "-it", "-c", "app", "--", "sh"},
			wantURL: "/p/apis/debug.compute.datumapis.com/v1alpha/namespaces/team/instances/web-dfw-0/exec?command=sh&container=app&stdin=true&stdout=true&tty=true"},
		"no arguments":              {args: []string{}, wantErr: "needs an INSTANCE"},
		"no command":                {args: []string{"web-dfw-0"}, wantErr: "one INSTANCE and the COMMAND after --"},
		"an empty command":          {args: []string{"web-dfw-0", "--"}, wantErr: "needs a COMMAND after --"},
		"no instance":               {args: []string{"--", "sh"}, wantErr: "needs an INSTANCE before --"},
		"a command without --":      {args: []string{"web-dfw-0", "sh"}, wantErr: "COMMAND after --"},
		"two instances before --":   {args: []string{"a", "b", "--", "sh"}, wantErr: "one INSTANCE"},
		"flags after -- are remote": {args: []string{"web-dfw-0", "--", "ls", "-l"}, wantURL: "command=ls&command=-l"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd, o := newCommand(&cmdutil.Factory{})
			err := cmdutil.Parse(cmd, o, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || cmdutil.ExitCode(err) != cmdutil.ExitCode(cmdutil.UsageErrorf("x")) {
					t.Fatalf("got %v, want a usage error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o.namespace = "team"
			u, err := o.execURL("https://project.example/p")
			if err != nil {
				t.Fatal(err)
			}
			if got := u.RequestURI(); !strings.Contains(got, tc.wantURL) {
				t.Errorf("got %s, want %s", got, tc.wantURL)
			}
		})
	}
}

func TestTheRemoteExitCodeIsTheCLIs(t *testing.T) {
	err := exitError(utilexec.CodeExitError{Err: errors.New("command terminated with non-zero exit code"), Code: 7})
	if diff := cmp.Diff(7, cmdutil.ExitCode(err)); diff != "" {
		t.Error(diff)
	}
	if exitError(nil) != nil {
		t.Error("a command that exits 0 is no error")
	}
	if got := cmdutil.ExitCode(exitError(errors.New("upgrade refused"))); got != cmdutil.ExitCode(cmdutil.Failf("x")) {
		t.Errorf("a session that fails is a failure, got exit code %d", got)
	}
}

func TestTheSizeQueueEndsWithTheSession(t *testing.T) {
	q := make(sizeQueue, 1)
	q <- remotecommand.TerminalSize{Width: 120, Height: 40}
	if got := q.Next(); got == nil || got.Width != 120 || got.Height != 40 {
		t.Fatalf("got %+v", got)
	}
	close(q)
	if got := q.Next(); got != nil {
		t.Errorf("a closed queue must end the resizes, got %+v", got)
	}
}

func TestWithoutATerminalNothingIsRaw(t *testing.T) {
	var out strings.Builder
	f := &cmdutil.Factory{Streams: cmdutil.IOStreams{IOStreams: genericiooptions.IOStreams{In: strings.NewReader("x"), Out: &out, ErrOut: &out}}}
	o := &Options{Factory: f, Stdin: true, TTY: true}
	opts, restore, err := o.streams()
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	if opts.TerminalSizeQueue != nil || opts.Stdin == nil || !opts.Tty || opts.Stderr != nil {
		t.Errorf("-it on a pipe passes stdin and asks for a remote terminal (stderr joins stdout) without resizes: %+v", opts)
	}
	o = &Options{Factory: f}
	opts, _, _ = o.streams()
	if opts.Stdin != nil || opts.Stderr == nil || opts.Tty {
		t.Errorf("without -i or -t: no stdin, stderr apart: %+v", opts)
	}
}
