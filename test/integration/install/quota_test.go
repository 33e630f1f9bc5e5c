package install_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/citycells/compute/internal/manager/quotaserver"
)

// deploymentOf returns the Deployment name of an overlay's rendering.
func deploymentOf(t *testing.T, objs []*unstructured.Unstructured, name string) *appsv1.Deployment {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == "Deployment" && u.GetName() == name {
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatalf("the rendering holds no Deployment %s", name)
	return nil
}

// expandArgs expands $(VAR) in the container's args from its literal env
// values and the downward API's metadata.namespace, as the kubelet does.
func expandArgs(t *testing.T, d *appsv1.Deployment, c corev1.Container) []string {
	t.Helper()
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			vars[e.Name] = d.Namespace
		}
	}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	var out []string
	for _, a := range c.Args {
		out = append(out, ref.ReplaceAllStringFunc(a, func(m string) string {
			v, ok := vars[m[2:len(m)-1]]
			if !ok {
				t.Errorf("%s's arg %q names %s, which its env does not set", d.Name, a, m)
			}
			return v
		}))
	}
	return out
}

// TestTheQuotaDeploymentRunsAsItsOverlaySays parses the quota-plane
// overlay's compute-quota Deployment arguments with compute-quota's own
// flags, checks the Pod it would run against the plane's restricted Pod
// Security admission, then runs compute-quota's wiring (quotaserver.Run,
// what the binary runs) with those arguments, as the overlay's
// ServiceAccount: it becomes ready, takes its Lease in compute-system,
// registers compute's resources, and serves metrics to a token bound to
// compute-quota-metrics-reader only.
func TestTheQuotaDeploymentRunsAsItsOverlaySays(t *testing.T) {
	installed(t)
	ctx := context.Background()
	objs := render(t, "quota-plane")
	d := deploymentOf(t, objs, "compute-quota")
	if d.Namespace != "compute-system" || d.Spec.Template.Spec.ServiceAccountName != "compute-quota" {
		t.Fatalf("compute-quota runs in %s as %s, want compute-system as compute-quota", d.Namespace, d.Spec.Template.Spec.ServiceAccountName)
	}
	c := d.Spec.Template.Spec.Containers[0]
	args := expandArgs(t, d, c)

	o := parseQuotaArgs(t, args)
	if !o.LeaderElect || o.LeaderElectionNamespace != "compute-system" {
		t.Errorf("leader election %v in %q, want on, in compute-system", o.LeaderElect, o.LeaderElectionNamespace)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if want := ":" + strconv.Itoa(int(ports["metrics"])); o.MetricsAddr != want || !o.Serving.MetricsSecure {
		t.Errorf("metrics on %q (secure %v), want HTTPS on the metrics port %s", o.MetricsAddr, o.Serving.MetricsSecure, want)
	}
	if want := ":" + strconv.Itoa(int(ports["probes"])); o.ProbeAddr != want {
		t.Errorf("probes on %q, want the probes port %s", o.ProbeAddr, want)
	}
	if c.LivenessProbe == nil || c.ReadinessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("compute-quota's probes are %v and %v, want /healthz and /readyz", c.LivenessProbe, c.ReadinessProbe)
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("compute-quota's root filesystem is writable")
	}
	checkPDBCovers(t, objs, d)
	checkServiceSelects(t, objs, "compute-quota-metrics", d, "metrics")

	// The plane's Pod Security admission, enforcing restricted in
	// compute-system, admits the Pod the Deployment would create.
	admitsPod(t, d)

	// Run it as the overlay says, on local ports, with the overlay's
	// identity.
	metricsPort, probePort := freePort(t), freePort(t)
	o.MetricsAddr, o.ProbeAddr = "127.0.0.1:"+strconv.Itoa(metricsPort), "127.0.0.1:"+strconv.Itoa(probePort)
	runQuota(t, o)

	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed test server; who may read is checked here
	}}
	get := func(url, token string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	eventually(t, time.Minute, "compute-quota reports ready on /readyz", func() error {
		if code, body := get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort), ""); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	cs, err := kubernetes.NewForConfig(env.Plane(project).Config())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "compute-quota holds its Lease compute-system/compute-quota", func() error {
		l, err := cs.CoordinationV1().Leases("compute-system").Get(ctx, "compute-quota", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return fmt.Errorf("no holder")
		}
		return nil
	})
	eventually(t, time.Minute, "compute-quota registers compute's resources", func() error {
		regs := &unstructured.UnstructuredList{}
		regs.SetAPIVersion("quota.miloapis.com/v1alpha1")
		regs.SetKind("ResourceRegistrationList")
		if err := env.Client(project).List(ctx, regs); err != nil {
			return err
		}
		if len(regs.Items) == 0 {
			return fmt.Errorf("no ResourceRegistrations")
		}
		return nil
	})

	reader := serviceAccountConfig(t, project, "default", "quota-scraper")
	stranger := serviceAccountConfig(t, project, "default", "stranger")
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "quota-scraper-metrics"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "compute-quota-metrics-reader"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "quota-scraper", "namespace": "default"}},
	}}
	if err := env.Client(project).Create(ctx, binding); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/metrics", metricsPort)
	if code, body := get(url, ""); code != http.StatusUnauthorized {
		t.Errorf("a scrape without a token got %d %q, want 401", code, body)
	}
	if code, body := get(url, stranger.BearerToken); code != http.StatusForbidden {
		t.Errorf("a token without get on /metrics got %d %q, want 403", code, body)
	}
	eventually(t, 30*time.Second, "a compute-quota-metrics-reader token reads the metrics", func() error {
		if code, body := get(url, reader.BearerToken); code != http.StatusOK {
			return fmt.Errorf("%d %.200s", code, body)
		}
		return nil
	})
}

// parseQuotaArgs parses, completes and validates compute-quota's
// arguments with its own flags.
func parseQuotaArgs(t *testing.T, args []string) *quotaserver.Options {
	t.Helper()
	o := quotaserver.NewOptions()
	fs := pflag.NewFlagSet("compute-quota", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("compute-quota refuses the arguments %q: %v", args, err)
	}
	if err := o.Complete(fs); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("compute-quota refuses the arguments %q: %v", args, err)
	}
	return o
}

// runQuota runs compute-quota's wiring (quotaserver.Run, what the binary
// runs) with o in the project plane, as the overlay's ServiceAccount
// compute-system/compute-quota, until the test ends.
func runQuota(t *testing.T, o *quotaserver.Options) {
	t.Helper()
	o.Kubeconfig = writeKubeconfig(t, "quota", serviceAccountConfig(t, project, "compute-system", "compute-quota"))
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- quotaserver.Run(runCtx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("compute-quota: %v", err)
		}
	})
}

// checkPDBCovers: a PodDisruptionBudget of the rendering selects d's Pods
// and keeps one of d's replicas (more than one) up.
func checkPDBCovers(t *testing.T, objs []*unstructured.Unstructured, d *appsv1.Deployment) {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() != "PodDisruptionBudget" {
			continue
		}
		sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
		if len(sel) == 0 || !matches(sel, d.Spec.Template.Labels) {
			continue
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			t.Errorf("%s has a PodDisruptionBudget but %v replicas: a drain would still take it down", d.Name, d.Spec.Replicas)
		}
		return
	}
	t.Errorf("no PodDisruptionBudget selects %s's Pods", d.Name)
}

// checkServiceSelects: the Service name selects d's Pods and targets the
// named container port.
func checkServiceSelects(t *testing.T, objs []*unstructured.Unstructured, name string, d *appsv1.Deployment, port string) {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() != "Service" || u.GetName() != name {
			continue
		}
		svc := &corev1.Service{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, svc); err != nil {
			t.Fatal(err)
		}
		if !matches(svc.Spec.Selector, d.Spec.Template.Labels) {
			t.Errorf("Service %s selects %v, not %s's Pods", name, svc.Spec.Selector, d.Name)
		}
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != port {
			t.Errorf("Service %s targets %v, want the container port %q", name, svc.Spec.Ports, port)
		}
		return
	}
	t.Errorf("the rendering holds no Service %s", name)
}

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// admitsPod creates the Pod of d's template with a server-side dry run in
// its namespace (Pod Security admission enforcing restricted, the
// ServiceAccount admission requiring its account), and checks a privileged
// variant is refused, so the admission is known to be enforcing.
func admitsPod(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Plane(project).Config())
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name + "-admission-probe", Labels: d.Spec.Template.Labels},
		Spec:       *d.Spec.Template.Spec.DeepCopy(),
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if _, err := cs.CoreV1().Pods(d.Namespace).Create(ctx, pod, dry); err != nil {
		t.Errorf("the %s plane refuses %s's Pod: %v", project, d.Name, err)
	}
	privileged := pod.DeepCopy()
	yes := true
	privileged.Spec.Containers[0].SecurityContext.Privileged = &yes
	privileged.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &yes
	if _, err := cs.CoreV1().Pods(d.Namespace).Create(ctx, privileged, dry); err == nil {
		t.Errorf("a privileged variant of %s's Pod is admitted in %s: the namespace does not enforce restricted Pod Security", d.Name, d.Namespace)
	}
}

// eventually retries fn until it succeeds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v after %s", what, err, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestTheManagerPodIsAdmittedRestricted: the management-plane overlay's
// compute-manager Pod passes the plane's restricted Pod Security admission
// too, and its PodDisruptionBudget and metrics Service select it.
func TestTheManagerPodIsAdmittedRestricted(t *testing.T) {
	installed(t)
	objs := render(t, "management-plane")
	d := deploymentOf(t, objs, "compute-manager")
	checkPDBCovers(t, objs, d)
	checkServiceSelects(t, objs, "compute-manager-metrics", d, "metrics")
	admitsPod(t, d)
}
