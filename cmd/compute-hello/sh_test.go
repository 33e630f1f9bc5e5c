package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runScript runs script through a shell with prompt and returns its exit
// code, output and error output.
func runScript(script, prompt string) (int, string, string) {
	var out, errOut bytes.Buffer
	sh := &shell{out: &out, errOut: &errOut, prompt: prompt,
		size: func() (int, int, error) { return 24, 80, nil }}
	code := sh.run(strings.NewReader(script))
	return code, out.String(), errOut.String()
}

func TestTheShellRunsItsCommandsAndExitsAsAsked(t *testing.T) {
	file := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(file, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		script, wantOut, wantErr string
		wantCode                 int
	}{
		"echo prints its words": {
			script: "echo hello   from\techo\n", wantOut: "hello from echo\n"},
		"cat prints a mounted file": {
			script: "cat " + file + "\n", wantOut: "hunter2\n"},
		"cat of a missing file says so and goes on": {
			script: "cat /nonexistent\necho after\n", wantOut: "after\n", wantErr: "cat: /nonexistent: no such file or directory\n"},
		"exit N exits with N and runs nothing after": {
			script: "exit 3\necho never\n", wantCode: 3},
		"exit alone exits with the last status": {
			script: "frobnicate\nexit\n", wantCode: 127, wantErr: "sh: frobnicate: not found\n"},
		"an unknown command is not found and the shell goes on": {
			script: "ls /\necho still here\n", wantOut: "still here\n", wantErr: "sh: ls: not found\n"},
		"the end of the input exits 0 whatever failed": {
			script: "ls\n", wantErr: "sh: ls: not found\n"},
		"blank lines, comments and CRLF are fine": {
			script: "\n   \n# a comment\r\necho crlf\r\n", wantOut: "crlf\n"},
		"a bad exit code is refused with status 2 and the shell goes on": {
			script: "exit three\nexit\n", wantCode: 2, wantErr: "sh: exit: Illegal number: three\n"},
		"exit codes wrap at 256 as in sh": {
			script: "exit 259\n", wantCode: 3},
		"stty size prints rows and columns": {
			script: "stty size\n", wantOut: "24 80\n"},
		"an input without a final newline still runs": {
			script: "echo last", wantOut: "last\n"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runScript(tc.script, "")
			if code != tc.wantCode || out != tc.wantOut || errOut != tc.wantErr {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q",
					code, out, errOut, tc.wantCode, tc.wantOut, tc.wantErr)
			}
		})
	}
}

func TestTheShellPromptsBeforeEveryLineOnATerminal(t *testing.T) {
	code, out, _ := runScript("echo a\necho b\n", "$ ")
	if want := "$ a\n$ b\n$ "; code != 0 || out != want {
		t.Errorf("exit %d, stdout %q; want exit 0, stdout %q", code, out, want)
	}
}

func TestSttySizeSaysWhyItCannotTell(t *testing.T) {
	var out, errOut bytes.Buffer
	sh := &shell{out: &out, errOut: &errOut, size: func() (int, int, error) { return 0, 0, errors.New("not a terminal") }}
	code := sh.run(strings.NewReader("stty size\nexit\n"))
	if code != 1 || errOut.String() != "stty: not a terminal\n" {
		t.Errorf("exit %d, stderr %q; want exit 1 saying it is not a terminal", code, errOut.String())
	}
}
