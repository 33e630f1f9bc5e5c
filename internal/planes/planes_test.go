package planes

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/citycells/compute/internal/toolchain"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// TestPlanes starts three planes once and checks what tests and the local
// platform rely on; the last subtest stops them.
func TestPlanes(t *testing.T) {
	began := time.Now()
	env := StartForTest(t, Options{Planes: []PlaneSpec{
		{Name: "project", ControllerManager: true, CRDDirs: []string{"testdata/crds"}},
		{Name: "cell-dfw"},
		{Name: "cell-lhr", Aggregation: true, SANs: []string{"cell-lhr.example.test", "192.0.2.10"}},
	}})
	t.Logf("3 planes started in %s", time.Since(began).Round(time.Millisecond))
	ctx := t.Context()

	t.Run("every plane answers /version with the pinned Kubernetes version", func(t *testing.T) {
		g := NewWithT(t)
		for _, p := range env.Planes() {
			v, err := kubernetes.NewForConfigOrDie(p.Config()).Discovery().ServerVersion()
			g.Expect(err).NotTo(HaveOccurred(), p.Name())
			g.Expect(v.GitVersion).To(Equal(toolchain.KubernetesVersion), p.Name())
		}
	})

	t.Run("the kubeconfig file reaches its plane as admin", func(t *testing.T) {
		g := NewWithT(t)
		p := env.Plane("cell-dfw")
		data, err := os.ReadFile(p.KubeconfigPath())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(data).To(Equal(p.KubeconfigBytes()))
		cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cfg.Host).To(Equal(p.URL()))
		_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	})

	t.Run("CRDs from a directory are established before Start returns", func(t *testing.T) {
		g := NewWithT(t)
		cfg := env.Plane("project").Config()
		crd, err := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions().
			Get(ctx, "widgets.example.com", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(crdCondition(crd, apiextensionsv1.Established)).To(BeTrue())
		_, err = dynamic.NewForConfigOrDie(cfg).Resource(widgets).Namespace("default").
			Create(ctx, widget("first"), metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())

		_, err = apiextensionsclient.NewForConfigOrDie(env.Plane("cell-dfw").Config()).ApiextensionsV1().
			CustomResourceDefinitions().Get(ctx, "widgets.example.com", metav1.GetOptions{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "planes share etcd but not CRDs: %v", err)
	})

	t.Run("the garbage collector deletes dependents of a deleted owner", func(t *testing.T) {
		g := NewWithT(t)
		cfg := env.Plane("project").Config()
		cs := kubernetes.NewForConfigOrDie(cfg)
		owner, err := cs.CoreV1().ConfigMaps("default").Create(ctx, configMap("owner", nil), metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
		_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, configMap("dependent", &ref), metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		// A dependent of a kind installed by Start: the collector knows it
		// only because the CRD existed before the controller manager.
		w := widget("dependent")
		w.SetOwnerReferences([]metav1.OwnerReference{ref})
		widgetClient := dynamic.NewForConfigOrDie(cfg).Resource(widgets).Namespace("default")
		_, err = widgetClient.Create(ctx, w, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())

		err = cs.CoreV1().ConfigMaps("default").Delete(ctx, owner.Name,
			metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "dependent", metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "dependent ConfigMap still there: %v", err)
			_, err = widgetClient.Get(ctx, "dependent", metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "dependent Widget still there: %v", err)
		}).WithContext(ctx).WithTimeout(20 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	})

	t.Run("namespace deletion completes", func(t *testing.T) {
		g := NewWithT(t)
		cs := kubernetes.NewForConfigOrDie(env.Plane("project").Config())
		_, err := cs.CoreV1().Namespaces().Create(ctx,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = cs.CoreV1().ConfigMaps("doomed").Create(ctx, configMap("content", nil), metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = dynamic.NewForConfigOrDie(env.Plane("project").Config()).Resource(widgets).Namespace("doomed").
			Create(ctx, widget("content"), metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())

		began := time.Now()
		g.Expect(cs.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{})).To(Succeed())
		g.Eventually(func(g Gomega) {
			_, err := cs.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace still there: %v", err)
		}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		t.Logf("namespace deleted in %s", time.Since(began).Round(time.Millisecond))
	})

	t.Run("a minted non-admin identity is subject to RBAC", func(t *testing.T) {
		g := NewWithT(t)
		cfg, err := env.Plane("cell-dfw").ClientConfig("jane", "developers")
		g.Expect(err).NotTo(HaveOccurred())
		cs := kubernetes.NewForConfigOrDie(cfg)
		_, err = cs.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
		g.Expect(err.Error()).To(ContainSubstring(`User "jane"`))

		// Authenticated all the same: discovery is open to everyone.
		_, err = cs.Discovery().ServerVersion()
		g.Expect(err).NotTo(HaveOccurred())
	})

	t.Run("aggregation publishes the front-proxy CA to aggregated apiservers", func(t *testing.T) {
		g := NewWithT(t)
		cm, err := kubernetes.NewForConfigOrDie(env.Plane("cell-lhr").Config()).CoreV1().ConfigMaps("kube-system").
			Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cm.Data).To(HaveKey("requestheader-client-ca-file"))
		g.Expect(cm.Data["requestheader-allowed-names"]).To(ContainSubstring(frontProxyClientName))
	})

	t.Run("Stop ends every process, frees the ports and removes the directory", func(t *testing.T) {
		g := NewWithT(t)
		procs := env.Processes()
		g.Expect(procs).To(HaveLen(1 + 3 + 1)) // etcd, 3 apiservers, 1 controller manager
		for _, p := range procs {
			g.Expect(syscall.Kill(p.PID, 0)).To(Succeed(), "%s should run before Stop", p.Name)
			g.Expect(p.LogPath).To(BeAnExistingFile())
		}

		env.Stop()
		env.Stop() // idempotent

		for _, p := range procs {
			g.Expect(syscall.Kill(p.PID, 0)).To(MatchError(syscall.ESRCH), "%s (pid %d) is still alive", p.Name, p.PID)
			for _, port := range []int{p.Port, p.PeerPort} {
				if port == 0 {
					continue
				}
				l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
				g.Expect(err).NotTo(HaveOccurred(), "port %d of %s is still taken", port, p.Name)
				_ = l.Close()
			}
		}
		g.Expect(processesMentioning(env.Dir())).To(BeEmpty())
		g.Expect(env.Dir()).NotTo(BeADirectory())
	})
}

// TestStartFailsWithTheLogOfTheFailedProcess starts a plane whose apiserver
// rejects its flags: Start must name it, quote its log and leave nothing
// running.
func TestStartFailsWithTheLogOfTheFailedProcess(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	env, err := Start(t.Context(), Options{
		Dir: dir,
		Planes: []PlaneSpec{
			{Name: "healthy"},
			{Name: "broken", ExtraArgs: map[string]string{"--no-such-flag": "x"}},
		},
		Log: testLog{t},
	})
	t.Logf("Start failed as it should:\n%v", err)
	g.Expect(env).To(BeNil())
	g.Expect(err).To(MatchError(And(
		ContainSubstring("kube-apiserver-broken exited during start"),
		ContainSubstring("unknown flag: --no-such-flag"),
		ContainSubstring(filepath.Join(dir, "logs", "kube-apiserver-broken.log")),
	)))
	g.Expect(processesMentioning(dir)).To(BeEmpty())
	g.Expect(dir).To(BeADirectory(), "a caller-provided Dir is kept")
}

// TestStartNamesTheFixWhenBinariesAreMissing checks the error a fresh
// machine gets.
func TestStartNamesTheFixWhenBinariesAreMissing(t *testing.T) {
	t.Setenv(toolchain.EnvToolsDir, t.TempDir())
	_, err := Start(t.Context(), Options{Planes: []PlaneSpec{{Name: "project"}}})
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("make tools")))
}

// TestValidate checks the options Start refuses before starting anything.
func TestValidate(t *testing.T) {
	tests := map[string]struct {
		opts    Options
		wantErr string
	}{
		"no planes is refused": {
			opts:    Options{},
			wantErr: "no planes",
		},
		"a name that cannot be a path and etcd prefix is refused": {
			opts:    Options{Planes: []PlaneSpec{{Name: "Cell/DFW"}}},
			wantErr: "invalid plane name",
		},
		"a name listed twice is refused": {
			opts:    Options{Planes: []PlaneSpec{{Name: "cell"}, {Name: "cell"}}},
			wantErr: "listed twice",
		},
		"distinct DNS labels are accepted": {
			opts: Options{Planes: []PlaneSpec{{Name: "project"}, {Name: "cell-dfw"}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := validate(tc.opts)
			if tc.wantErr == "" {
				NewWithT(t).Expect(err).NotTo(HaveOccurred())
				return
			}
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}
}

// TestAPIServerArgs checks the flags a plane's apiserver gets: its own etcd
// prefix, front-proxy flags with Aggregation, and ExtraArgs winning over the
// defaults whether or not their keys carry dashes.
func TestAPIServerArgs(t *testing.T) {
	e := &Environment{
		dir:     "/env",
		etcdURL: "http://127.0.0.1:2379",
		pki: &environmentPKI{
			caPath:            "/env/pki/ca.crt",
			frontProxyCAPath:  "/env/pki/front-proxy-ca.crt",
			frontProxyCrtPath: "/env/pki/front-proxy-client.crt",
			frontProxyKeyPath: "/env/pki/front-proxy-client.key",
		},
	}
	plane := func(spec PlaneSpec) *Plane {
		return &Plane{env: e, spec: spec, name: spec.Name, dir: "/env/planes/" + spec.Name, port: 6443, url: "https://127.0.0.1:6443"}
	}
	tests := map[string]struct {
		spec    PlaneSpec
		want    []string
		notWant []string
	}{
		"a plane stores under its own etcd prefix with RBAC on": {
			spec:    PlaneSpec{Name: "cell-dfw"},
			want:    []string{"--etcd-prefix=/cell-dfw", "--authorization-mode=RBAC", "--secure-port=6443", "--client-ca-file=/env/pki/ca.crt", "--service-account-issuer=https://127.0.0.1:6443"},
			notWant: []string{"--requestheader-allowed-names=front-proxy-client"},
		},
		"aggregation trusts the front-proxy CA and presents its client": {
			spec: PlaneSpec{Name: "karmada", Aggregation: true},
			want: []string{
				"--requestheader-client-ca-file=/env/pki/front-proxy-ca.crt",
				"--requestheader-allowed-names=front-proxy-client",
				"--proxy-client-cert-file=/env/pki/front-proxy-client.crt",
				"--proxy-client-key-file=/env/pki/front-proxy-client.key",
			},
		},
		"extra args override defaults, with or without dashes": {
			spec:    PlaneSpec{Name: "project", ExtraArgs: map[string]string{"--authorization-mode": "RBAC,Node", "feature-gates": "X=true"}},
			want:    []string{"--authorization-mode=RBAC,Node", "--feature-gates=X=true"},
			notWant: []string{"--authorization-mode=RBAC", "----authorization-mode=RBAC,Node"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			args := e.apiServerArgs(plane(tc.spec))
			g.Expect(args).To(ContainElements(tc.want))
			for _, a := range tc.notWant {
				g.Expect(args).NotTo(ContainElement(a))
			}
		})
	}
}

// TestReadCRDs reads nested directories and skips what is not a full CRD.
func TestReadCRDs(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	nested := filepath.Join(dir, "apps")
	g.Expect(os.MkdirAll(nested, 0o700)).To(Succeed())
	src, err := os.ReadFile("testdata/crds/widgets.example.com.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	patch := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n"
	other := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	g.Expect(os.WriteFile(filepath.Join(nested, "all.yaml"), []byte(other+"---\n"+string(src)+"---\n"+patch), 0o600)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "README.md"), []byte("not yaml"), 0o600)).To(Succeed())

	crds, err := ReadCRDs(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(crds).To(HaveLen(1))
	g.Expect(crds[0].Name).To(Equal("widgets.example.com"))

	_, err = ReadCRDs(filepath.Join(dir, "missing"))
	g.Expect(err).To(HaveOccurred())
}

// processesMentioning returns the command lines of live processes that
// mention s, which identifies processes started for one environment dir.
func processesMentioning(s string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // exited meanwhile
		}
		if strings.Contains(string(cmdline), s) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

func configMap(name string, owner *metav1.OwnerReference) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
	if owner != nil {
		cm.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return cm
}

func widget(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"size": int64(3)},
	}}
}
