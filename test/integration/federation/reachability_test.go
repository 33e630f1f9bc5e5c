package federation

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/cellhealth"
	"github.com/citycells/compute/internal/local/faults"
	"github.com/citycells/compute/internal/planes"
)

// TestACityNobodyHearsFromIsMarkedStaleAndComesBack plays a cell of NRT
// (a city no other test uses): its Karmada Cluster and its real heartbeat.
// When the heartbeat stops, the project WorkloadDeployment keeps its last
// known counts but its conditions turn Unknown (CellUnreachable) with the
// time last seen, without being rewritten while nothing changes; when it
// resumes, the hub's status is mirrored again. Karmada's own verdict (the
// Cluster's Ready condition) marks the city stale the same way.
func TestACityNobodyHearsFromIsMarkedStaleAndComesBack(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	cluster := newReadyCluster(t, "cell-nrt", "NRT")

	ns, hubNS := newNamespace(t)
	wd := makeWD(ns, "web-nrt", "NRT", 2)
	g.Expect(projectClient.Create(ctx, wd)).To(Succeed())
	g.Eventually(get(hubClient, hubNS, wd.Name, &computev1alpha.WorkloadDeployment{}), timeout, interval).Should(Succeed())
	reportOnHub(t, hubNS, wd.Name, 2, 2)

	t.Log("the cell's heartbeat runs: the city is fresh")
	stop := startHeartbeat(t, cluster.Name, env.Plane(cellPlane).Config())
	g.Eventually(get(hubClient, cellhealth.Namespace, cluster.Name, &coordinationv1.Lease{}), timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		cur := projectWD(g, wd)
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, computev1alpha.ConditionAvailable)).To(BeTrue())
		g.Expect(cur.Status.LastSeenTime).To(BeNil())
	}, timeout, interval).Should(Succeed())

	t.Log("the heartbeat stops: the city is stale, with its last known counts")
	stop()
	stopped := time.Now()
	g.Eventually(func(g Gomega) {
		cur := projectWD(g, wd)
		avail := meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.ConditionAvailable)
		g.Expect(avail).NotTo(BeNil())
		g.Expect(avail.Status).To(Equal(metav1.ConditionUnknown))
		g.Expect(avail.Reason).To(Equal(computev1alpha.ReasonCellUnreachable))
		g.Expect(avail.Message).To(And(ContainSubstring("no heartbeat from cell cell-nrt"), ContainSubstring("last known: Available=True")))
		g.Expect(cur.Status.LastSeenTime).NotTo(BeNil())
		g.Expect(cur.Status.ReadyReplicas).To(Equal(int32(2)))
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, computev1alpha.ConditionFederated)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	t.Logf("marked stale %s after the heartbeat stopped (lease duration 2 s)", time.Since(stopped).Round(10*time.Millisecond))

	t.Log("while it stays quiet the status is not rewritten")
	settled := projectWD(g, wd).ResourceVersion
	g.Consistently(func(g Gomega) string { return projectWD(g, wd).ResourceVersion }, 3*time.Second, interval).Should(Equal(settled))

	t.Log("the heartbeat resumes: the hub's status is mirrored again")
	stop = startHeartbeat(t, cluster.Name, env.Plane(cellPlane).Config())
	defer stop()
	g.Eventually(func(g Gomega) {
		cur := projectWD(g, wd)
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, computev1alpha.ConditionAvailable)).To(BeTrue())
		g.Expect(cur.Status.LastSeenTime).To(BeNil())
	}, timeout, interval).Should(Succeed())

	t.Log("Karmada reports the Cluster not Ready: the city is stale again, saying so")
	setClusterReady(t, cluster.Name, metav1.ConditionFalse)
	g.Eventually(func(g Gomega) {
		avail := meta.FindStatusCondition(projectWD(g, wd).Status.Conditions, computev1alpha.ConditionAvailable)
		g.Expect(avail).NotTo(BeNil())
		g.Expect(avail.Reason).To(Equal(computev1alpha.ReasonCellUnreachable))
		g.Expect(avail.Message).To(ContainSubstring("Karmada reports cluster cell-nrt not Ready"))
	}, timeout, interval).Should(Succeed())
	setClusterReady(t, cluster.Name, metav1.ConditionTrue)
	g.Eventually(func(g Gomega) {
		g.Expect(meta.IsStatusConditionTrue(projectWD(g, wd).Status.Conditions, computev1alpha.ConditionAvailable)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
}

// TestACellWhoseAPIServerHangsStopsVouchingForItself plays a cell of KIX
// whose compute-manager still reaches the hub while its own API server
// hangs (frozen, or a network that swallows its packets: the link proxy
// holds the connections and never answers). The heartbeat stops renewing
// within its probe's timeout, so the city is stale once the Lease expires;
// the API server answering again makes it fresh again, and it stays so.
func TestACellWhoseAPIServerHangsStopsVouchingForItself(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	cluster := newReadyCluster(t, "cell-kix", "KIX")

	// The heartbeat reaches the real cell plane through a link the test can
	// make hang.
	cellCfg := rest.CopyConfig(env.Plane(cellPlane).Config())
	target, err := url.Parse(cellCfg.Host)
	g.Expect(err).NotTo(HaveOccurred())
	ports, err := planes.FreePorts(2)
	g.Expect(err).NotTo(HaveOccurred())
	proxy, err := faults.NewProxy([]faults.LinkRecord{{Name: "heartbeat→cell-kix", City: "KIX", Port: ports[0], Target: target.Host}},
		"127.0.0.1:"+strconv.Itoa(ports[1]))
	g.Expect(err).NotTo(HaveOccurred())
	go proxy.Serve()
	t.Cleanup(proxy.Close)
	links, err := faults.NewClient(proxy.ControlURL())
	g.Expect(err).NotTo(HaveOccurred())
	cellCfg.Host = "https://127.0.0.1:" + strconv.Itoa(ports[0])

	ns, hubNS := newNamespace(t)
	wd := makeWD(ns, "web-kix", "KIX", 1)
	g.Expect(projectClient.Create(ctx, wd)).To(Succeed())
	g.Eventually(get(hubClient, hubNS, wd.Name, &computev1alpha.WorkloadDeployment{}), timeout, interval).Should(Succeed())
	reportOnHub(t, hubNS, wd.Name, 1, 1)
	startHeartbeat(t, cluster.Name, cellCfg)
	fresh := func(g Gomega) {
		cur := projectWD(g, wd)
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, computev1alpha.ConditionAvailable)).To(BeTrue())
		g.Expect(cur.Status.LastSeenTime).To(BeNil())
	}
	g.Eventually(fresh, timeout, interval).Should(Succeed())

	t.Log("the cell's API server hangs: the heartbeat stops, the city is stale")
	_, err = links.Partition(ctx, "KIX", 0, faults.PartitionHang)
	g.Expect(err).NotTo(HaveOccurred())
	hung := time.Now()
	g.Eventually(func(g Gomega) {
		avail := meta.FindStatusCondition(projectWD(g, wd).Status.Conditions, computev1alpha.ConditionAvailable)
		g.Expect(avail).NotTo(BeNil())
		g.Expect(avail.Reason).To(Equal(computev1alpha.ReasonCellUnreachable))
	}, timeout, interval).Should(Succeed())
	t.Logf("marked stale %s after the cell's API server hung (renewal every 500 ms, lease 2 s, probe timeout 250 ms)", time.Since(hung).Round(10*time.Millisecond))

	t.Log("it answers again: the city is fresh again, and stays so")
	_, err = links.Heal(ctx, "KIX")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(fresh, timeout, interval).Should(Succeed())
	g.Consistently(fresh, 3*time.Second, interval).Should(Succeed())
}

// newReadyCluster registers a Karmada Cluster of a city, Ready, removed
// when the test ends.
func newReadyCluster(t *testing.T, name, city string) *clusterv1alpha1.Cluster {
	t.Helper()
	ensureNamespace(t, hubClient, cellhealth.Namespace, nil)
	cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: map[string]string{computev1alpha.CityCodeTopologyLabel: city},
	}}
	NewWithT(t).Expect(hubClient.Create(t.Context(), cluster)).To(Succeed())
	t.Cleanup(func() { _ = hubClient.Delete(context.Background(), cluster) })
	setClusterReady(t, cluster.Name, metav1.ConditionTrue)
	return cluster
}

// startHeartbeat runs a cell's real heartbeat against the hub, renewing
// every 500 ms for 2 s while the cell's API server at cell answers; the
// returned function stops it and waits.
func startHeartbeat(t *testing.T, name string, cell *rest.Config) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	hb := &cellhealth.Heartbeat{Config: env.Plane(hubPlane).Config(), Cell: cell, Name: name, Interval: 500 * time.Millisecond, Duration: 2 * time.Second}
	go func() { done <- hb.Start(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("heartbeat: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// setClusterReady writes the Ready condition Karmada would on a Cluster.
func setClusterReady(t *testing.T, name string, status metav1.ConditionStatus) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		cl := &clusterv1alpha1.Cluster{}
		if err := hubClient.Get(context.Background(), client.ObjectKey{Name: name}, cl); err != nil {
			return err
		}
		reason := "ClusterReady"
		if status != metav1.ConditionTrue {
			reason = "ClusterNotReachable"
		}
		meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{
			Type: clusterv1alpha1.ClusterConditionReady, Status: status, Reason: reason, Message: "set by the test",
		})
		return hubClient.Status().Update(context.Background(), cl)
	}, timeout, interval).Should(Succeed())
}
