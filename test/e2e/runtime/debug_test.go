//go:build e2e

package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/local/faults"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/clitest"
)

// relayUser is the debug API relay's hub identity, which Karmada
// impersonates in the cell: the management role's hub ServiceAccount.
const relayUser = "system:serviceaccount:compute-system:compute-federation"

// relayRole names the relay's ClusterRole in the cell and the RoleBinding
// of it the cell's compute-manager keeps in each federation namespace.
const relayRole = "compute-debug-relay"

// TestLogsAndExecWithTheTenantsOwnRights: a viewer follows the demo's log
// while a request is made (one line a request), reads a crashed
// container's --previous log, and is refused exec; an editor runs a command
// that reads a mounted Secret, one that reads its stdin and one whose exit
// code passes through; a tenant of another namespace is refused both; the
// relay's identity in the cell reaches nothing but Pods' logs and exec; a
// partitioned city's logs fail at once naming the city.
func TestLogsAndExecWithTheTenantsOwnRights(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	other := newProjectNamespace(t)
	admin := newCLIUser(t, ns.name)
	g.Expect(project.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.name, Name: "db"},
		StringData: map[string]string{"password": "hunter2"}})).To(Succeed())
	w := clitest.NewWorkload("dbg").Namespace(ns.name).Image(local.State().Registry+"/"+platform.DemoImage).Placement("default", 1, city).Build()
	spec := &w.Spec.Template.Spec
	spec.Volumes = []computev1alpha.InstanceVolume{{Name: "db", Secret: &computev1alpha.SecretVolumeSource{SecretName: "db"}}}
	spec.Runtime.Sandbox.Containers[0].VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "db", MountPath: ptr.To("/etc/db")}}
	g.Expect(project.Create(ctx, w)).To(Succeed())
	admin.run(cmdutil.ExitOK, "rollout", "status", "dbg", "--timeout", "3m", "-y")
	inst := servingInstance(g, ns)

	// The tenants' roles as the management-plane overlay installs them (the
	// local project planes run no clusterrole aggregation into view/edit).
	viewer := newTenant(t, ns.name, "tenant-viewer", ns.name, "compute-viewer")
	editor := newTenant(t, ns.name, "tenant-editor", ns.name, "compute-editor")
	stranger := newTenant(t, ns.name, "tenant-stranger", other.name, "compute-editor")

	t.Log("--- a viewer reads the logs, and a follow shows a request as it is made")
	g.Eventually(func(g Gomega) {
		res := viewer.exec("logs", "dbg")
		g.Expect(res.Code).To(Equal(cmdutil.ExitOK), "%s", res.Stderr)
		g.Expect(res.Stdout).To(ContainSubstring("[" + inst.Name + "] "))
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed(), "the debug API never served the viewer")
	followShowsARequest(t, viewer, inst)

	t.Log("--- the viewer may not exec; the editor may")
	res := viewer.run(cmdutil.ExitFailure, "exec", inst.Name, "--", "/hello", "-cat", "/etc/db/password")
	g.Expect(res.Stderr).To(ContainSubstring(`resource "instances/exec" in API group "debug.compute.datumapis.com"`))
	res = editor.run(cmdutil.ExitOK, "exec", inst.Name, "--", "/hello", "-cat", "/etc/db/password")
	g.Expect(res.Stdout).To(Equal("hunter2"))
	res = editor.runWith(clitest.RunOptions{Stdin: "from stdin\n"}, cmdutil.ExitOK, "exec", inst.Name, "-i", "--", "/hello", "-cat", "/dev/stdin")
	g.Expect(res.Stdout).To(Equal("from stdin\n"))
	res = editor.run(7, "exec", inst.Name, "--", "/hello", "-exit", "7")
	g.Expect(res.Stderr).To(ContainSubstring("exiting with code 7"))

	t.Log("--- a tenant of another namespace may do neither")
	res = stranger.run(cmdutil.ExitFailure, "logs", inst.Name)
	g.Expect(res.Stderr).To(ContainSubstring(`User "tenant-stranger" cannot get resource`))
	// Straight at the debug API, past the CLI's own reads.
	cfg, err := clientcmd.BuildConfigFromFlags("", stranger.h.Kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	err = cs.CoreV1().RESTClient().Get().
		AbsPath("/apis/debug.compute.datumapis.com/v1alpha/namespaces", ns.name, "instances", inst.Name, "log").Do(ctx).Error()
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the stranger read the log straight from the debug API: %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`cannot get resource "instances/log"`))
	res = stranger.run(cmdutil.ExitFailure, "exec", inst.Name, "--", "/hello", "-exit", "0")
	g.Expect(res.Stderr).To(ContainSubstring(`resource "instances/exec" in API group "debug.compute.datumapis.com"`))

	measureLatency(t, ns, inst.Name, viewer, editor)
	relayIsFenced(t, ns, inst.Name)
	previousAfterACrash(t, ns, viewer)
	partitionedCityFailsFast(t, viewer)
}

// followShowsARequest follows the instance's log and checks a request
// made after the follow started shows within seconds.
func followShowsARequest(t *testing.T, u *cliUser, inst *computev1alpha.Instance) {
	t.Helper()
	g := NewWithT(t)
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		var stderr bytes.Buffer
		f := u.h.Factory(clitest.RunOptions{}, &bytes.Buffer{}, &stderr)
		f.Streams.Out = out
		done <- cli.Main(ctx, []string{"logs", inst.Name, "-f", "--tail", "0"}, f)
	}()
	time.Sleep(2 * time.Second)
	probe := fmt.Sprintf("probe-%d", time.Now().UnixNano())
	asked := time.Now()
	g.Expect(get(t, "http://"+address(inst)+":8080/?"+url.Values{"id": {probe}}.Encode())).To(ContainSubstring("hello from"))
	g.Eventually(out.String).WithTimeout(30*time.Second).WithPolling(50*time.Millisecond).Should(ContainSubstring(probe),
		"the followed log never showed the request")
	t.Logf("the request's line reached logs -f %s after the request (load %s)", time.Since(asked).Round(time.Millisecond), loadAvg())
	cancel()
	g.Expect(<-done).To(Equal(cmdutil.ExitOK), "Ctrl-C should end a follow cleanly")
}

// relayIsFenced checks, in the cell, what the relay's identity (as Karmada
// impersonates it) may do: read a Pod's log in the federation namespace
// (where the cell's compute-manager bound it), nothing else, and nothing
// in kube-system.
func relayIsFenced(t *testing.T, ns projectNamespace, pod string) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	t.Log("--- the cell binds the relay in the federation namespace only")
	rb := &rbacv1.RoleBinding{}
	g.Expect(cell.Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: relayRole}, rb)).To(Succeed())
	g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: relayRole}))
	g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: relayUser}}))
	err := cell.Get(ctx, client.ObjectKey{Name: relayRole}, &rbacv1.ClusterRoleBinding{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ClusterRoleBinding %s: want none, got %v", relayRole, err)
	cfg := rest.CopyConfig(local.Config(platform.CellPlane(city)))
	cfg.Impersonate = rest.ImpersonationConfig{UserName: relayUser, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:compute-system"}}
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	t.Log("--- the relay's identity in the cell reads Pods' logs and nothing else, and is refused in kube-system")
	_, err = cs.CoreV1().Pods(ns.hub).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("the relay %s: want Forbidden, got %v", what, err)
		}
	}
	_, err = cs.CoreV1().Pods(ns.hub).Get(ctx, pod, metav1.GetOptions{})
	forbidden("reading the Pod itself", err)
	_, err = cs.CoreV1().Pods(ns.hub).List(ctx, metav1.ListOptions{})
	forbidden("listing Pods", err)
	_, err = cs.CoreV1().Secrets(ns.hub).List(ctx, metav1.ListOptions{})
	forbidden("listing the namespace's Secrets", err)
	_, err = cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	forbidden("listing another namespace's Secrets", err)
	_, err = cs.CoreV1().Pods(ns.hub).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "intruder"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{})
	forbidden("creating a Pod", err)
	// Authorization comes first: a Pod of kube-system, or none, is
	// Forbidden alike.
	kubeSystem, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
	forbidden("listing kube-system's Pods", err)
	victim := "kube-apiserver"
	if kubeSystem != nil && len(kubeSystem.Items) > 0 {
		victim = kubeSystem.Items[0].Name
	}
	_, err = cs.CoreV1().Pods("kube-system").GetLogs(victim, &corev1.PodLogOptions{}).DoRaw(ctx)
	forbidden("reading a log in kube-system", err)
	err = cs.CoreV1().RESTClient().Post().Namespace("kube-system").Resource("pods").Name(victim).SubResource("exec").
		Param("command", "true").Param("stdout", "true").Do(ctx).Error()
	forbidden("exec in kube-system", err)
	_, err = cs.CoreV1().Pods("compute-system").GetLogs(victim, &corev1.PodLogOptions{}).DoRaw(ctx)
	forbidden("reading a log in compute-system", err)
}

// previousAfterACrash reads, as the viewer, the log of a crashed
// container with --previous.
func previousAfterACrash(t *testing.T, ns projectNamespace, viewer *cliUser) {
	t.Helper()
	g := NewWithT(t)
	t.Log("--- --previous shows the crashed container's last words")
	admin := newCLIUser(t, ns.name)
	admin.run(cmdutil.ExitOK, "deploy", "crashy", "--image", local.State().Registry+"/"+platform.DemoImage, "--city", city,
		"--min", "1", "--args=-exit", "--args=3", "--detach", "-y")
	g.Eventually(func(g Gomega) {
		res := viewer.exec("logs", "crashy", "--previous")
		g.Expect(res.Code).To(Equal(cmdutil.ExitOK), "%s", res.Stderr)
		g.Expect(res.Stdout).To(ContainSubstring("exiting with code 3 as asked"))
	}).WithTimeout(wait).WithPolling(2 * time.Second).Should(Succeed())
	admin.run(cmdutil.ExitOK, "destroy", "crashy", "--yes")
}

// partitionedCityFailsFast cuts the city off the hub and checks logs fail
// within seconds, naming the city.
func partitionedCityFailsFast(t *testing.T, viewer *cliUser) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	t.Log("--- a partitioned city's logs fail at once, naming the city")
	g.Expect(local.Partition(ctx, city, 0, faults.PartitionHang)).To(Succeed())
	healed := false
	heal := func() {
		if !healed {
			healed = true
			g.Expect(local.Heal(context.Background(), city)).To(Succeed())
		}
	}
	defer heal()
	var took time.Duration
	g.Eventually(func(g Gomega) {
		began := time.Now()
		res := viewer.exec("logs", "dbg")
		took = time.Since(began)
		g.Expect(res.Code).To(Equal(cmdutil.ExitFailure))
		g.Expect(res.Stderr).To(ContainSubstring("city " + city + " is unreachable"))
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())
	g.Expect(took).To(BeNumerically("<", 20*time.Second), "logs of a partitioned city took %s", took)
	t.Logf("logs of the partitioned city failed in %s", took.Round(time.Millisecond))
	heal()
	g.Eventually(func(g Gomega) {
		g.Expect(viewer.exec("logs", "dbg").Code).To(Equal(cmdutil.ExitOK))
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed(), "logs never came back after the partition healed")
}

// newTenant binds user to clusterRole in namespace bindNS of the project
// and returns a CLI user of namespace ns with the user's own certificate.
func newTenant(t *testing.T, ns, user, bindNS, clusterRole string) *cliUser {
	t.Helper()
	g := NewWithT(t)
	g.Expect(project.Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: bindNS},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})).To(Succeed())
	data, err := local.Environment().Plane(platform.ProjectPlane(platform.DefaultProject)).ClientKubeconfig(user, "tenants")
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	g.Expect(os.WriteFile(path, data, 0o600)).To(Succeed())
	return &cliUser{t: t, h: clitest.ForKubeconfig(t, path, ns)}
}

// runWith runs a command with o, logs it, and fails unless it exits code.
func (u *cliUser) runWith(o clitest.RunOptions, code int, args ...string) clitest.Result {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	o.Ctx = ctx
	res := u.h.Run(cli.Main, o, args...)
	u.t.Logf("$ datumctl-compute %s\n(exit %d)\n--- stdout\n%s--- stderr\n%s", strings.Join(args, " "), res.Code, res.Stdout, res.Stderr)
	if res.Code != code {
		u.t.Fatalf("`%s` exited %d, want %d", strings.Join(args, " "), res.Code, code)
	}
	return res
}

// syncBuffer is a buffer a command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// loadAvg is the machine's load, for timings.
func loadAvg() string {
	data, _ := os.ReadFile("/proc/loadavg")
	fields := strings.Fields(string(data))
	return strings.Join(fields[:min(3, len(fields))], " ")
}

// measureLatency logs the median of ten first-byte latencies of a log
// follow and of ten exec round trips (a command that prints a file), through
// the debug API and straight at the cell, as the closing note of #41 asks.
func measureLatency(t *testing.T, ns projectNamespace, pod string, viewer, editor *cliUser) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	tenantCS := func(u *cliUser) (*rest.Config, kubernetes.Interface) {
		cfg, err := clientcmd.BuildConfigFromFlags("", u.h.Kubeconfig)
		g.Expect(err).NotTo(HaveOccurred())
		cs, err := kubernetes.NewForConfig(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		return cfg, cs
	}
	_, viewerCS := tenantCS(viewer)
	editorCfg, _ := tenantCS(editor)
	cellCfg := local.Config(platform.CellPlane(city))
	cellCS, err := kubernetes.NewForConfig(cellCfg)
	g.Expect(err).NotTo(HaveOccurred())
	logPath := "/apis/debug.compute.datumapis.com/v1alpha/namespaces/" + ns.name + "/instances/" + pod + "/log"
	through := median(t, func() (io.ReadCloser, error) {
		return viewerCS.CoreV1().RESTClient().Get().AbsPath(logPath).Param("follow", "true").Param("tailLines", "1").Stream(ctx)
	})
	straight := median(t, func() (io.ReadCloser, error) {
		return cellCS.CoreV1().Pods(ns.hub).GetLogs(pod, &corev1.PodLogOptions{Follow: true, TailLines: ptr.To[int64](1)}).Stream(ctx)
	})
	command := url.Values{"command": {"/hello", "-cat", "/etc/db/password"}, "stdout": {"true"}, "stderr": {"true"}}
	execThrough := median(t, execOpener(ctx, editorCfg, "/apis/debug.compute.datumapis.com/v1alpha/namespaces/"+ns.name+"/instances/"+pod+"/exec", command))
	execStraight := median(t, execOpener(ctx, cellCfg, "/api/v1/namespaces/"+ns.hub+"/pods/"+pod+"/exec", command))
	t.Logf("first byte, median of 10: logs -f through the debug API %s, straight at the cell %s; exec (a command printing a file) through %s, straight %s (load %s)",
		through, straight, execThrough, execStraight, loadAvg())
}

// median opens ten times and returns the median time to the first byte.
func median(t *testing.T, open func() (io.ReadCloser, error)) time.Duration {
	t.Helper()
	var ds []time.Duration
	for range 10 {
		began := time.Now()
		rc, err := open()
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		if _, err := rc.Read(make([]byte, 1)); err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("read: %v", err)
		}
		ds = append(ds, time.Since(began))
		_ = rc.Close()
	}
	slices.Sort(ds)
	return ds[len(ds)/2].Round(100 * time.Microsecond)
}

// execOpener runs command at path on cfg's server over WebSocket and
// returns its stdout as a stream that has its first byte once the
// command printed.
func execOpener(ctx context.Context, cfg *rest.Config, path string, command url.Values) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		u, err := url.Parse(cfg.Host + path + "?" + command.Encode())
		if err != nil {
			return nil, err
		}
		ex, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
		if err != nil {
			return nil, err
		}
		pr, pw := io.Pipe()
		go func() {
			err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: pw, Stderr: io.Discard})
			_ = pw.CloseWithError(err)
		}()
		return drainingReader{pr}, nil
	}
}

// drainingReader reads the rest of an exec's output on Close, so the
// session ends as it would for a user rather than on a closed pipe.
type drainingReader struct{ *io.PipeReader }

// Close drains what is left.
func (d drainingReader) Close() error {
	_, _ = io.Copy(io.Discard, d.PipeReader)
	return d.PipeReader.Close()
}
