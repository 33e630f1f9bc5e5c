//go:build linux

package platform

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// cleanNodes tears down every Pod of the platform's nodes while their
// containerd still runs: it stops each node's kubelet (which would start
// them again), then stops and removes every pod sandbox through the CRI,
// which stops the containers and releases their network namespaces and
// addresses through CNI.
func cleanNodes(st State, log io.Writer) {
	for _, n := range st.Nodes {
		for _, c := range st.Components {
			if c.Name == nodeComponent(componentKubelet, n.City) && owned(c) {
				_ = stopGroup(c.PID)
			}
		}
		if ok, _ := dialUnix(n.Socket); !ok {
			continue
		}
		if err := removeSandboxes(n.Socket); err != nil {
			_, _ = fmt.Fprintf(log, "node %s: %v (its containers are stopped with runc instead)\n", n.Name, err)
		}
	}
}

// removeSandboxes stops and removes every pod sandbox of a containerd.
func removeSandboxes(socket string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("failed to reach containerd at %s: %w", socket, err)
	}
	defer func() { _ = conn.Close() }()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("failed to list the pod sandboxes: %w", err)
	}
	for _, sb := range list.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			return fmt.Errorf("failed to stop pod sandbox %s: %w", sb.Id, err)
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			return fmt.Errorf("failed to remove pod sandbox %s: %w", sb.Id, err)
		}
	}
	return nil
}

// removeNodes removes what the nodes leave behind once their processes are
// gone: containers runc still knows (a containerd that died first), the
// containerd shims, every mount under a node's directory, the CNI bridge,
// and the nodes' state. Each step is best effort and says what failed.
func removeNodes(nodes []NodeRecord, log io.Writer) {
	for _, n := range nodes {
		for _, id := range runcContainers(n.RuncRoot) {
			if out, err := exec.Command("runc", "--root", n.RuncRoot, "delete", "--force", id).CombinedOutput(); err != nil {
				_, _ = fmt.Fprintf(log, "node %s: runc delete %s: %v: %s\n", n.Name, id, err, bytes.TrimSpace(out))
			}
		}
		killShims(n.Socket)
		for _, m := range mountsUnder(n.Dir) {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
				_, _ = fmt.Fprintf(log, "node %s: unmount %s: %v\n", n.Name, m, err)
			}
		}
		if _, err := os.Stat("/sys/class/net/" + n.Bridge); err == nil {
			if out, err := exec.Command("ip", "link", "delete", n.Bridge).CombinedOutput(); err != nil {
				_, _ = fmt.Fprintf(log, "node %s: ip link delete %s: %v: %s\n", n.Name, n.Bridge, err, bytes.TrimSpace(out))
			}
		}
		_ = os.Remove(n.Socket)
		_ = os.Remove(n.Socket + ".ttrpc")
		_ = os.Remove(filepath.Dir(n.Socket))
		if len(mountsUnder(n.Dir)) == 0 {
			_ = os.RemoveAll(n.Dir)
		}
	}
}

// runcContainers lists the containers runc holds state for under root.
func runcContainers(root string) []string {
	if _, err := os.Stat(root); err != nil {
		return nil
	}
	out, err := exec.Command("runc", "--root", root, "list", "--quiet").Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}

// killShims kills the containerd shims serving the containerd at socket:
// they outlive a containerd that dies, holding their containers.
func killShims(socket string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(cmdline, "\x00")), "\x00")
		if len(args) == 0 || !strings.Contains(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		if i := slices.Index(args, "-address"); i >= 0 && i+1 < len(args) && args[i+1] == socket {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// mountsUnder returns the mount points at or below dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
