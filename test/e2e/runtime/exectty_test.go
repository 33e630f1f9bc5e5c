//go:build e2e

package runtime

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/clitest"
)

// TestExecWithATerminalRunsAShellAndPassesItsExitCode is #41's `exec -it`
// as a developer types it: the real datumctl-compute binary, in a real
// pseudo-terminal of its own, runs the demo's scripted shell
// (/hello -sh) in the instance's container through the debug API; the
// shell prompts, `stty size` shows the terminal's size — also after the
// terminal is resized while the session runs —, `cat` prints the mounted
// Secret, and `exit 3` ends the session with the CLI exiting 3.
func TestExecWithATerminalRunsAShellAndPassesItsExitCode(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	admin := newCLIUser(t, ns.name)
	secret := "s3cret-" + rand.String(8)
	g.Expect(project.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.name, Name: "db"},
		StringData: map[string]string{"password": secret}})).To(Succeed())
	w := clitest.NewWorkload("tty").Namespace(ns.name).Image(local.State().Registry+"/"+platform.DemoImage).Placement("default", 1, city).Build()
	spec := &w.Spec.Template.Spec
	spec.Volumes = []computev1alpha.InstanceVolume{{Name: "db", Secret: &computev1alpha.SecretVolumeSource{SecretName: "db"}}}
	spec.Runtime.Sandbox.Containers[0].VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "db", MountPath: ptr.To("/etc/db")}}
	g.Expect(project.Create(ctx, w)).To(Succeed())
	bin := buildCLI(t)
	admin.run(cmdutil.ExitOK, "rollout", "status", "tty", "--timeout", "3m", "-y")
	inst := servingInstance(g, ns)
	editor := newTenant(t, ns.name, "tenant-tty", ns.name, "compute-editor")

	t.Log("--- exec -it in a terminal of 30×100: the shell prompts and sees that size")
	began := time.Now()
	term := startInTerminal(t, &pty.Winsize{Rows: 30, Cols: 100}, bin,
		"--kubeconfig", editor.h.Kubeconfig, "-n", ns.name, "exec", inst.Name, "-it", "--", "/hello", "-sh")
	term.waitFor("$ ", wait)
	t.Logf("the first prompt showed %s after the CLI started (load %s)", time.Since(began).Round(time.Millisecond), loadAvg())
	term.typeUntil("stty size", "30 100")

	t.Log("--- the terminal is resized to 40×120 while the session runs: the remote terminal follows")
	resized := time.Now()
	g.Expect(pty.Setsize(term.ptmx, &pty.Winsize{Rows: 40, Cols: 120})).To(Succeed())
	term.typeUntil("stty size", "40 120")
	t.Logf("the remote terminal had the new size %s after the resize (load %s)", time.Since(resized).Round(time.Millisecond), loadAvg())

	t.Log("--- cat prints the mounted Secret; an unknown command is not found")
	typed := time.Now()
	term.typeUntil("cat /etc/db/password", secret)
	t.Logf("cat's output showed %s after it was typed (load %s)", time.Since(typed).Round(time.Millisecond), loadAvg())
	term.typeUntil("ls /", "sh: ls: not found")

	t.Log("--- exit 3 ends the session, and the CLI exits 3")
	term.typeLine("exit 3")
	code := term.wait(wait)
	t.Logf("the whole session took %s (load %s); the terminal showed:\n%s", time.Since(began).Round(time.Millisecond), loadAvg(), term.out.String())
	g.Expect(code).To(Equal(3), "the CLI's exit code is not the shell's")
}

// buildCLI builds datumctl-compute, as a user runs it, into a temporary
// directory and returns its path.
func buildCLI(t *testing.T) string {
	t.Helper()
	began := time.Now()
	bin := filepath.Join(t.TempDir(), "datumctl-compute")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/citycells/compute/cmd/datumctl-compute")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/datumctl-compute: %v\n%s", err, out)
	}
	t.Logf("built datumctl-compute in %s (load %s)", time.Since(began).Round(time.Millisecond), loadAvg())
	return bin
}

// terminal is a command running in a pseudo-terminal of its own, as in a
// terminal emulator: the pseudo-terminal is its controlling terminal, so
// resizing it signals the command (SIGWINCH).
type terminal struct {
	t    *testing.T
	ptmx *os.File
	cmd  *exec.Cmd
	// out is everything the terminal showed.
	out *syncBuffer
	// done is closed when the command has exited and its output is read.
	done chan struct{}
}

// startInTerminal starts bin with args in a new pseudo-terminal of size,
// with an environment of its own (a home of its own, no KUBECONFIG, no
// datumctl session).
func startInTerminal(t *testing.T, size *pty.Winsize, bin string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TERM=xterm"}
	ptmx, err := pty.StartWithSize(cmd, size)
	if err != nil {
		t.Fatalf("no pseudo-terminal for %s: %v", bin, err)
	}
	term := &terminal{t: t, ptmx: ptmx, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		// Reading ends with EIO once the command and its children closed
		// the terminal.
		_, _ = io.Copy(term.out, ptmx)
	}()
	go func() {
		defer close(term.done)
		_ = cmd.Wait()
		select {
		case <-copied:
		case <-time.After(5 * time.Second):
		}
	}()
	t.Cleanup(func() {
		select {
		case <-term.done:
		default:
			_ = cmd.Process.Kill()
			<-term.done
		}
		_ = ptmx.Close()
	})
	return term
}

// waitFor waits until the terminal shows want, failing the test after
// timeout with what it shows.
func (term *terminal) waitFor(want string, timeout time.Duration) {
	term.t.Helper()
	if !term.shows(want, timeout) {
		term.t.Fatalf("the terminal never showed %q in %s; it shows:\n%q", want, timeout, term.out.String())
	}
}

// shows reports whether the terminal shows want within timeout.
func (term *terminal) shows(want string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !strings.Contains(term.out.String(), want) {
		select {
		case <-term.done:
			return strings.Contains(term.out.String(), want)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// typeLine types line and Return, as a user at a raw terminal does.
func (term *terminal) typeLine(line string) {
	term.t.Helper()
	if _, err := term.ptmx.Write([]byte(line + "\r")); err != nil {
		term.t.Fatalf("typing %q: %v", line, err)
	}
}

// typeUntil types line and waits for the terminal to show want after it;
// a line whose answer depends on something asynchronous (a resize reaching
// the remote terminal) is typed again, up to a bound.
func (term *terminal) typeUntil(line, want string) {
	term.t.Helper()
	for range 10 {
		before := len(term.out.String())
		term.typeLine(line)
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if strings.Contains(term.out.String()[before:], want) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	term.t.Fatalf("typing %q never showed %q; the terminal shows:\n%q", line, want, term.out.String())
}

// wait waits for the command to exit and returns its exit code.
func (term *terminal) wait(timeout time.Duration) int {
	term.t.Helper()
	select {
	case <-term.done:
	case <-time.After(timeout):
		term.t.Fatalf("the command did not exit within %s; the terminal shows:\n%q", timeout, term.out.String())
	}
	return term.cmd.ProcessState.ExitCode()
}
