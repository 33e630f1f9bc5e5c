package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// shell is compute-hello's scripted shell (-sh): the image has no shell, so
// `exec -it INSTANCE -- /hello -sh` gets this one. It reads one command a
// line and knows a handful of them:
//
//	echo ARGS...   prints ARGS, separated by spaces
//	cat FILE...    prints the files
//	stty size      prints the terminal's rows and columns ("24 80")
//	exit [N]       exits with N (default: the last command's status)
//
// Words are split at white space (no quoting, no variables); blank lines and
// lines starting with # are skipped. Anything else prints "sh: X: not found"
// and has status 127, as in sh. The end of the input exits 0.
type shell struct {
	out, errOut io.Writer
	// prompt is printed before each line; empty when the input is not a
	// terminal.
	prompt string
	// size returns the terminal's rows and columns (stty size).
	size func() (rows, cols int, err error)
	// status is the last command's exit status.
	status int
}

// run reads commands from in until exit or the end of the input and
// returns the exit code.
func (sh *shell) run(in io.Reader) int {
	lines := bufio.NewScanner(in)
	for {
		_, _ = io.WriteString(sh.out, sh.prompt)
		if !lines.Scan() {
			return 0
		}
		words := strings.Fields(lines.Text())
		if len(words) == 0 || strings.HasPrefix(words[0], "#") {
			continue
		}
		if words[0] == "exit" {
			if code, ok := sh.exitCode(words[1:]); ok {
				return code
			}
			continue
		}
		sh.status = sh.command(words[0], words[1:])
	}
}

// exitCode is the code `exit ARGS` exits with; false when ARGS are bad.
func (sh *shell) exitCode(args []string) (int, bool) {
	if len(args) == 0 {
		return sh.status, true
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 0 || len(args) > 1 {
		_, _ = fmt.Fprintf(sh.errOut, "sh: exit: Illegal number: %s\n", strings.Join(args, " "))
		sh.status = 2
		return 0, false
	}
	return n & 0xff, true
}

// command runs one command other than exit and returns its status.
func (sh *shell) command(name string, args []string) int {
	switch name {
	case "echo":
		_, _ = fmt.Fprintln(sh.out, strings.Join(args, " "))
		return 0
	case "cat":
		status := 0
		for _, path := range args {
			if err := sh.cat(path); err != nil {
				var pe *fs.PathError
				if errors.As(err, &pe) {
					err = fmt.Errorf("%s: %w", path, pe.Err)
				}
				_, _ = fmt.Fprintf(sh.errOut, "cat: %v\n", err)
				status = 1
			}
		}
		return status
	case "stty":
		if len(args) != 1 || args[0] != "size" {
			_, _ = fmt.Fprintln(sh.errOut, "stty: only `stty size` is known here")
			return 1
		}
		rows, cols, err := sh.size()
		if err != nil {
			_, _ = fmt.Fprintf(sh.errOut, "stty: %v\n", err)
			return 1
		}
		_, _ = fmt.Fprintf(sh.out, "%d %d\n", rows, cols)
		return 0
	}
	_, _ = fmt.Fprintf(sh.errOut, "sh: %s: not found\n", name)
	return 127
}

// cat copies the file at path to the shell's output.
func (sh *shell) cat(path string) error {
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	_, err = io.Copy(sh.out, f)
	return err
}
