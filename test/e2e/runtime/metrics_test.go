//go:build e2e

package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/citycells/compute/internal/local/platform"
)

// The metrics pipeline of the cells (metrics-server, beside the real
// node's cell only). Its bounds are the suite's: metrics-server scrapes
// every 15 s and needs two scrapes of a container for its first rate, so a
// new Pod has metrics within about 30 s and a load shows within one or two
// scrapes, inside wait on a loaded machine.

// podMetrics is the part of a metrics.k8s.io/v1beta1 PodMetrics the tests
// read.
type podMetrics struct {
	Timestamp  metav1.Time     `json:"timestamp"`
	Window     metav1.Duration `json:"window"`
	Containers []struct {
		Name  string              `json:"name"`
		Usage corev1.ResourceList `json:"usage"`
	} `json:"containers"`
}

// cpu is the Pod's CPU usage over its containers.
func (m podMetrics) cpu() resource.Quantity {
	var total resource.Quantity
	for _, c := range m.Containers {
		total.Add(c.Usage[corev1.ResourceCPU])
	}
	return total
}

// TestAPodOnTheRealNodeHasMetricsThatFollowItsLoad runs the demo on the
// real node, waits for its PodMetrics in the cell, makes it burn a core and
// waits until its CPU usage shows the load.
func TestAPodOnTheRealNodeHasMetricsThatFollowItsLoad(t *testing.T) {
	g := NewWithT(t)
	cell := cellsets[city]
	pod := runDemo(t, cell, "burner")

	began := time.Now()
	var idle podMetrics
	g.Eventually(func() error {
		var err error
		idle, err = getPodMetrics(t.Context(), cell, pod)
		return err
	}).WithTimeout(wait).WithPolling(poll).Should(Succeed(), "no PodMetrics for %s", pod.Name)
	idleCPU := idle.cpu()
	t.Logf("PodMetrics served %s after the Pod ran: cpu %s over a %s window", time.Since(began).Round(100*time.Millisecond), idleCPU.String(), idle.Window.Duration)
	g.Expect(idle.Containers).To(HaveLen(1))
	g.Expect(idle.Containers[0].Usage).To(HaveKey(corev1.ResourceMemory))

	burn := fmt.Sprintf("http://%s:8080/burn?seconds=120&cores=1", pod.Status.PodIP)
	g.Expect(httpGet(t, burn)).To(Equal(http.StatusAccepted))
	began = time.Now()
	// A tenth of a core: far above the idle demo (a few millicores), and
	// reached even when the machine's other work leaves the burner little.
	loaded := resource.MustParse("100m")
	var busy podMetrics
	g.Eventually(func(g Gomega) {
		var err error
		busy, err = getPodMetrics(t.Context(), cell, pod)
		g.Expect(err).NotTo(HaveOccurred())
		cpu := busy.cpu()
		g.Expect(cpu.Cmp(loaded)).To(BeNumerically(">=", 0), "cpu %s", cpu.String())
	}).WithTimeout(wait).WithPolling(poll).Should(Succeed(), "the burning Pod's CPU usage never showed in its PodMetrics")
	busyCPU := busy.cpu()
	t.Logf("the load showed %s after the burn began: cpu %s (idle %s)", time.Since(began).Round(100*time.Millisecond), busyCPU.String(), idleCPU.String())

	node := platform.CellPlane(city)
	raw, err := cell.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/nodes").DoRaw(t.Context())
	g.Expect(err).NotTo(HaveOccurred(), "NodeMetrics of %s", node)
	g.Expect(string(raw)).To(ContainSubstring(`"name":"node-dfw"`))
}

// TestOnlyACellWithARealNodeServesTheMetricsAPI: the cell with the node
// lists the APIService Available; the cell without one has none, and its
// apiserver knows no metrics.k8s.io.
func TestOnlyACellWithARealNodeServesTheMetricsAPI(t *testing.T) {
	g := NewWithT(t)
	const path = "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io"

	raw, err := cellsets[city].CoreV1().RESTClient().Get().AbsPath(path).DoRaw(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	var svc struct {
		Status struct {
			Conditions []metav1.Condition `json:"conditions"`
		} `json:"status"`
	}
	g.Expect(json.Unmarshal(raw, &svc)).To(Succeed())
	g.Expect(svc.Status.Conditions).To(ContainElement(And(
		HaveField("Type", "Available"), HaveField("Status", metav1.ConditionTrue))), "in %s", platform.CellPlane(city))

	plain := cellsets[simulatedCity].CoreV1().RESTClient()
	_, err = plain.Get().AbsPath(path).DoRaw(t.Context())
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "APIService v1beta1.metrics.k8s.io in %s: %v", platform.CellPlane(simulatedCity), err)
	_, err = plain.Get().AbsPath("/apis/metrics.k8s.io/v1beta1/pods").DoRaw(t.Context())
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "metrics.k8s.io in %s: %v", platform.CellPlane(simulatedCity), err)
}

// TestMetricsServerStoppedAndStartedAgain: while the cell's metrics-server
// is stopped (compute-local stop) the metrics API answers 503, never stale
// numbers; started again, it serves the node's metrics.
func TestMetricsServerStoppedAndStartedAgain(t *testing.T) {
	g := NewWithT(t)
	cell := cellsets[city]
	name := "metrics-server-" + strings.ToLower(city)
	const nodes = "/apis/metrics.k8s.io/v1beta1/nodes/node-dfw"
	g.Eventually(func() error {
		_, err := cell.CoreV1().RESTClient().Get().AbsPath(nodes).DoRaw(t.Context())
		return err
	}).WithTimeout(wait).WithPolling(poll).Should(Succeed(), "no NodeMetrics before the stop")

	g.Expect(local.StopComponent(name, platform.StopOptions{})).To(Succeed())
	stopped := time.Now()
	g.Eventually(func() bool {
		_, err := cell.CoreV1().RESTClient().Get().AbsPath(nodes).DoRaw(t.Context())
		return apierrors.IsServiceUnavailable(err)
	}).WithTimeout(wait).WithPolling(poll).Should(BeTrue(), "the metrics API still answers with %s stopped", name)
	t.Logf("the metrics API answered 503 %s after the stop", time.Since(stopped).Round(100*time.Millisecond))

	g.Expect(local.StartComponent(t.Context(), name)).To(Succeed())
	started := time.Now()
	g.Eventually(func() error {
		_, err := cell.CoreV1().RESTClient().Get().AbsPath(nodes).DoRaw(t.Context())
		return err
	}).WithTimeout(wait).WithPolling(poll).Should(Succeed(), "no NodeMetrics after the start")
	t.Logf("NodeMetrics served again %s after the start", time.Since(started).Round(100*time.Millisecond))
}

// runDemo runs the demo image in a Pod of the cell's default namespace and
// waits until it runs with an address; the Pod is deleted after the test.
func runDemo(t *testing.T, cell kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "hello",
				Image: local.State().Registry + "/" + platform.DemoImage,
				Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
				}},
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	_, err := cell.CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("failed to create Pod %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cell.CoreV1().Pods(pod.Namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	NewWithT(t).Eventually(func(g Gomega) {
		got, err := cell.CoreV1().Pods(pod.Namespace).Get(t.Context(), name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.Phase).To(Equal(corev1.PodRunning))
		g.Expect(got.Status.PodIP).NotTo(BeEmpty())
		pod = got
	}).WithTimeout(wait).WithPolling(poll).Should(Succeed(), "Pod %s never ran", name)
	return pod
}

// getPodMetrics reads a Pod's PodMetrics from the cell's metrics.k8s.io.
func getPodMetrics(ctx context.Context, cell kubernetes.Interface, pod *corev1.Pod) (podMetrics, error) {
	var m podMetrics
	raw, err := cell.CoreV1().RESTClient().Get().
		AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", pod.Namespace, "pods", pod.Name).DoRaw(ctx)
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(raw, &m)
}

// httpGet GETs url from this machine and returns the status code.
func httpGet(t *testing.T, url string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
