package quota_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/standin/quotaservice"
	"github.com/citycells/compute/test/integration/fixtures"
)

const (
	settleTimeout = 2 * time.Minute
	poll          = 100 * time.Millisecond
)

// tally counts the live claims of a namespace by their Granted answer.
type tally struct {
	Total, Granted, Exceeded, Pending, Invalid, Undecided int
}

// countClaims tallies the claims of ns as the API server has them.
func countClaims(ctx context.Context, c client.Client, ns string) (tally, error) {
	list := &quotav1alpha1.ResourceClaimList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return tally{}, err
	}
	var t tally
	for i := range list.Items {
		cl := &list.Items[i]
		if cl.DeletionTimestamp != nil {
			continue
		}
		t.Total++
		cond := meta.FindStatusCondition(cl.Status.Conditions, quotav1alpha1.ResourceClaimConditionGranted)
		switch {
		case cond == nil || cl.Status.ObservedGeneration != cl.Generation:
			t.Undecided++
		case cond.Status == metav1.ConditionTrue:
			t.Granted++
		case cond.Reason == quotav1alpha1.ResourceClaimReasonQuotaExceeded:
			t.Exceeded++
		case cond.Reason == quotav1alpha1.ResourceClaimReasonValidationFailed:
			t.Invalid++
		default:
			t.Pending++
		}
	}
	return t, nil
}

// monitor watches the claims of a namespace from before they exist and
// records, event by event, how many live claims say Granted at once, and
// when each claim was first seen decided and granted.
type monitor struct {
	mu          sync.Mutex
	granted     map[string]bool
	maxGranted  int
	firstDecide map[string]time.Time
	firstGrant  map[string]time.Time
	// reasons are the Granted reasons each claim was seen with, in order.
	reasons map[string][]string
	events  int
}

// watchClaims starts a monitor on ns; it stops with the test. It resumes
// from the last resourceVersion whenever the apiserver ends the watch, so
// no event is lost.
func watchClaims(t *testing.T, c client.WithWatch, ns string) *monitor {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	list := &quotav1alpha1.ResourceClaimList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		cancel()
		t.Fatalf("failed to list claims: %v", err)
	}
	m := &monitor{granted: map[string]bool{}, firstDecide: map[string]time.Time{}, firstGrant: map[string]time.Time{}, reasons: map[string][]string{}}
	for i := range list.Items {
		m.observe(watch.Added, &list.Items[i], time.Now())
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, claimWatcher{c: c, ns: ns})
	if err != nil {
		cancel()
		t.Fatalf("failed to watch claims: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if cl, ok := ev.Object.(*quotav1alpha1.ResourceClaim); ok {
				m.observe(ev.Type, cl, time.Now())
			}
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		cancel()
		<-done
	})
	return m
}

// claimWatcher watches the claims of one namespace for a RetryWatcher.
type claimWatcher struct {
	c  client.WithWatch
	ns string
}

// WatchWithContext starts a watch at opts.ResourceVersion.
func (w claimWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return w.c.Watch(ctx, &quotav1alpha1.ResourceClaimList{}, &client.ListOptions{Namespace: w.ns, Raw: &opts})
}

// observe updates the monitor with one event.
func (m *monitor) observe(typ watch.EventType, cl *quotav1alpha1.ResourceClaim, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events++
	cond := meta.FindStatusCondition(cl.Status.Conditions, quotav1alpha1.ResourceClaimConditionGranted)
	isGranted := cond != nil && cond.Status == metav1.ConditionTrue
	if cond != nil {
		if rs := m.reasons[cl.Name]; len(rs) == 0 || rs[len(rs)-1] != cond.Reason {
			m.reasons[cl.Name] = append(rs, cond.Reason)
		}
	}
	if cond != nil && cl.Status.ObservedGeneration == cl.Generation && cl.Status.ObservedGeneration > 0 {
		if _, ok := m.firstDecide[cl.Name]; !ok {
			m.firstDecide[cl.Name] = at
		}
	}
	if isGranted {
		if _, ok := m.firstGrant[cl.Name]; !ok {
			m.firstGrant[cl.Name] = at
		}
	}
	live := typ != watch.Deleted && cl.DeletionTimestamp == nil
	m.granted[cl.Name] = isGranted && live
	n := 0
	for _, g := range m.granted {
		if g {
			n++
		}
	}
	m.maxGranted = max(m.maxGranted, n)
}

// reasonsOf returns the Granted reasons a claim went through.
func (m *monitor) reasonsOf(name string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reasons[name])
}

// counts returns how many claims the monitor saw decided and granted.
func (m *monitor) counts() [2]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return [2]int{len(m.firstDecide), len(m.firstGrant)}
}

// grantedBeyond returns the claims seen granted that are not in names.
func (m *monitor) grantedBeyond(names []string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for name := range m.firstGrant {
		if !slices.Contains(names, name) {
			out = append(out, name)
		}
	}
	return out
}

// peak returns the most live claims ever seen granted at once.
func (m *monitor) peak() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maxGranted
}

// latencies returns, for the named claims, the time from sent to the first
// time the monitor saw them in the state recorded by pick.
func (m *monitor) latencies(sent map[string]time.Time, pick func(*monitor) map[string]time.Time) []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []time.Duration
	seen := pick(m)
	for name, t0 := range sent {
		if t1, ok := seen[name]; ok {
			out = append(out, t1.Sub(t0))
		}
	}
	slices.Sort(out)
	return out
}

// percentile returns the p-th percentile (nearest rank) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.5) - 1
	rank = min(max(rank, 0), len(sorted)-1)
	return sorted[rank]
}

// bucketsOf returns the buckets of a project by resource type.
func bucketsOf(ctx context.Context, c client.Client, project string) (map[string]quotav1alpha1.AllowanceBucketStatus, error) {
	list := &quotav1alpha1.AllowanceBucketList{}
	if err := c.List(ctx, list, client.InNamespace(quotaservice.DefaultBucketNamespace)); err != nil {
		return nil, err
	}
	out := map[string]quotav1alpha1.AllowanceBucketStatus{}
	for _, b := range list.Items {
		if b.Spec.ConsumerRef.Name == project {
			s := b.Status
			s.LastReconciliation, s.ObservedGeneration, s.ContributingGrantRefs = nil, 0, nil
			out[b.Spec.ResourceType] = s
		}
	}
	return out, nil
}

// figures is what the buckets of a project of d1-standard-2 claims hold
// with granted claims against a grant of limit instances, 40 vCPU, 80 GiB.
func figures(limit, granted int64) map[string]quotav1alpha1.AllowanceBucketStatus {
	b := func(limit, allocated int64) quotav1alpha1.AllowanceBucketStatus {
		return quotav1alpha1.AllowanceBucketStatus{Limit: limit, Allocated: allocated, Available: max(limit-allocated, 0),
			ClaimCount: int32(granted), GrantCount: 1}
	}
	return map[string]quotav1alpha1.AllowanceBucketStatus{
		computev1alpha.ResourceTypeInstances: b(limit, granted),
		computev1alpha.ResourceTypeVCPUs:     b(40000, granted*1000),
		computev1alpha.ResourceTypeMemory:    b(81920, granted*2048),
	}
}

// TestABurstOfClaimsNeverOverGrants creates 200 claims at once against a
// grant of 10 instances: exactly 10 are granted and the rest exceed quota;
// after 5 granted claims are deleted, exactly 5 more are granted. A watch
// checks, event by event, that never more than 10 live claims say Granted.
// Three rounds, each with a fresh project.
func TestABurstOfClaimsNeverOverGrants(t *testing.T) {
	for round := 1; round <= 3; round++ {
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			burst(t, 200, 10, 5)
		})
	}
}

// burst runs one round: n claims against a grant of limit, then deletes
// release granted claims.
func burst(t *testing.T, n, limit, release int) {
	g := NewWithT(t)
	ctx := context.Background()
	project := uniqueName("p-burst")
	ns := project
	ensureNamespace(t, quotaKube, ns, nil)
	createGrant(t, quotaKube, ns, "grant", project, int64(limit), "40", "80Gi")
	// Let the grant be counted first, so every claim is decided against it.
	g.Eventually(func() (map[string]quotav1alpha1.AllowanceBucketStatus, error) {
		return bucketsOf(ctx, quotaKube, project)
	}, settleTimeout, poll).Should(Equal(figures(int64(limit), 0)))

	mon := watchClaims(t, quotaKube, ns)
	sent := map[string]time.Time{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("instance-web-%03d", i)
			t0 := time.Now()
			if err := quotaKube.Create(ctx, newClaim(ns, name, project)); err != nil {
				t.Errorf("failed to create claim %s: %v", name, err)
			}
			mu.Lock()
			sent[name] = t0
			mu.Unlock()
		})
	}
	wg.Wait()
	created := time.Since(start)

	g.Eventually(func() (tally, error) { return countClaims(ctx, quotaKube, ns) }, settleTimeout, poll).
		Should(Equal(tally{Total: n, Granted: limit, Exceeded: n - limit}))
	settled := time.Since(start)
	g.Eventually(func() (map[string]quotav1alpha1.AllowanceBucketStatus, error) {
		return bucketsOf(ctx, quotaKube, project)
	}, settleTimeout, poll).Should(Equal(figures(int64(limit), int64(limit))))

	claims := &quotav1alpha1.ResourceClaimList{}
	g.Expect(quotaKube.List(ctx, claims, client.InNamespace(ns))).To(Succeed())
	var grantedNames []string
	for i := range claims.Items {
		cl := &claims.Items[i]
		cond := meta.FindStatusCondition(cl.Status.Conditions, quotav1alpha1.ResourceClaimConditionGranted)
		// A grant is one status write: no claim gets a finalizer.
		g.Expect(cl.Finalizers).To(BeEmpty(), "claim %s has finalizers", cl.Name)
		if cond.Status == metav1.ConditionTrue {
			grantedNames = append(grantedNames, cl.Name)
			continue
		}
		g.Expect(cond.Message).To(Equal(fmt.Sprintf("requested 1 %s, 0 of %d available", computev1alpha.ResourceTypeInstances, limit)))
	}
	sort.Strings(grantedNames)

	// The watch may trail the API server under the burst: let it catch up
	// before reading figures from it.
	g.Eventually(mon.counts, settleTimeout, poll).Should(Equal([2]int{n, limit}))
	grantLat := mon.latencies(sent, func(m *monitor) map[string]time.Time { return m.firstGrant })
	decideLat := mon.latencies(sent, func(m *monitor) map[string]time.Time { return m.firstDecide })
	t.Logf("burst of %d claims against %d: created in %s, all decided %s after the first create", n, limit, created.Round(time.Millisecond), settled.Round(time.Millisecond))
	t.Logf("creation → Granted (%d claims): p50 %s, p99 %s, max %s", len(grantLat),
		percentile(grantLat, 50).Round(time.Millisecond), percentile(grantLat, 99).Round(time.Millisecond), percentile(grantLat, 100).Round(time.Millisecond))
	t.Logf("creation → decided (%d claims): p50 %s, p99 %s", len(decideLat),
		percentile(decideLat, 50).Round(time.Millisecond), percentile(decideLat, 99).Round(time.Millisecond))

	// Release some granted claims: exactly as many others are granted.
	releasedAt := time.Now()
	for _, name := range grantedNames[:release] {
		g.Expect(quotaKube.Delete(ctx, newClaim(ns, name, project))).To(Succeed())
	}
	g.Eventually(func() (tally, error) { return countClaims(ctx, quotaKube, ns) }, settleTimeout, poll).
		Should(Equal(tally{Total: n - release, Granted: limit, Exceeded: n - limit - release}))
	g.Eventually(func() (int, error) {
		list := &quotav1alpha1.ResourceClaimList{}
		err := quotaKube.List(ctx, list, client.InNamespace(ns))
		return len(list.Items), err
	}, settleTimeout, poll).Should(Equal(n-release), "deleted claims are released and go")
	g.Eventually(func() (map[string]quotav1alpha1.AllowanceBucketStatus, error) {
		return bucketsOf(ctx, quotaKube, project)
	}, settleTimeout, poll).Should(Equal(figures(int64(limit), int64(limit))))

	g.Eventually(func() int { return len(mon.grantedBeyond(grantedNames)) }, settleTimeout, poll).Should(Equal(release))
	var regrant []time.Duration
	mon.mu.Lock()
	for name, at := range mon.firstGrant {
		if !slices.Contains(grantedNames, name) {
			regrant = append(regrant, at.Sub(releasedAt))
		}
	}
	mon.mu.Unlock()
	slices.Sort(regrant)
	t.Logf("after deleting %d granted claims, %d others granted: p50 %s, max %s after the first delete",
		release, len(regrant), percentile(regrant, 50).Round(time.Millisecond), percentile(regrant, 100).Round(time.Millisecond))
	g.Expect(regrant).To(HaveLen(release))
	g.Expect(mon.peak()).To(Equal(limit), "at some moment more than %d live claims said Granted", limit)
}

// TestRaisingTheGrantAdmitsDeniedClaims raises a grant and adds a second
// one: denied claims are granted in creation order as capacity appears;
// lowering the grant revokes nothing.
func TestRaisingTheGrantAdmitsDeniedClaims(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	project := uniqueName("p-raise")
	ns := project
	ensureNamespace(t, quotaKube, ns, nil)
	grant := createGrant(t, quotaKube, ns, "grant", project, 2, "40", "80Gi")
	for i := range 5 {
		g.Expect(quotaKube.Create(ctx, newClaim(ns, fmt.Sprintf("instance-web-%d", i), project))).To(Succeed())
		time.Sleep(1100 * time.Millisecond) // distinct creation seconds: first come, first served is observable
	}
	g.Eventually(func() (tally, error) { return countClaims(ctx, quotaKube, ns) }, settleTimeout, poll).
		Should(Equal(tally{Total: 5, Granted: 2, Exceeded: 3}))
	g.Expect(grantedSet(ctx, t, ns)).To(Equal([]string{"instance-web-0", "instance-web-1"}))

	setInstances(ctx, t, grant, 4)
	g.Eventually(func() (tally, error) { return countClaims(ctx, quotaKube, ns) }, settleTimeout, poll).
		Should(Equal(tally{Total: 5, Granted: 4, Exceeded: 1}))
	g.Expect(grantedSet(ctx, t, ns)).To(Equal([]string{"instance-web-0", "instance-web-1", "instance-web-2", "instance-web-3"}))
	denied := &quotav1alpha1.ResourceClaim{}
	g.Expect(quotaKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "instance-web-4"}, denied)).To(Succeed())
	g.Expect(meta.FindStatusCondition(denied.Status.Conditions, "Granted").Message).
		To(Equal("requested 1 compute.datumapis.com/instances, 0 of 4 available"))

	createGrant(t, quotaKube, ns, "bonus", project, 1, "0", "0")
	g.Eventually(func() (tally, error) { return countClaims(ctx, quotaKube, ns) }, settleTimeout, poll).
		Should(Equal(tally{Total: 5, Granted: 5}))

	setInstances(ctx, t, grant, 1)
	g.Eventually(func() (quotav1alpha1.AllowanceBucketStatus, error) {
		b, err := bucketsOf(ctx, quotaKube, project)
		return b[computev1alpha.ResourceTypeInstances], err
	}, settleTimeout, poll).Should(Equal(quotav1alpha1.AllowanceBucketStatus{Limit: 2, Allocated: 5, Available: 0, ClaimCount: 5, GrantCount: 2}))
	g.Consistently(func() (tally, error) { return countClaims(ctx, quotaKube, ns) }, 2*time.Second, poll).
		Should(Equal(tally{Total: 5, Granted: 5}), "lowering a grant must not revoke granted claims")
}

// TestClaimsWithoutBudgetOrValidityWaitOrFail: a project without a grant
// leaves its claim pending (evaluated), and a claim for an unregistered
// resource type fails validation.
func TestClaimsWithoutBudgetOrValidityWaitOrFail(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	project := uniqueName("p-nobudget")
	ns := project
	ensureNamespace(t, quotaKube, ns, nil)
	g.Expect(quotaKube.Create(ctx, newClaim(ns, "instance-a", project))).To(Succeed())
	bad := newClaim(ns, "instance-b", project)
	bad.Spec.Requests = append(bad.Spec.Requests, quotav1alpha1.ResourceRequest{ResourceType: "compute.datumapis.com/gpus", Amount: 1})
	g.Expect(quotaKube.Create(ctx, bad)).To(Succeed())
	g.Eventually(func() (tally, error) { return countClaims(ctx, quotaKube, ns) }, settleTimeout, poll).
		Should(Equal(tally{Total: 2, Pending: 1, Invalid: 1}))
	pending := &quotav1alpha1.ResourceClaim{}
	g.Expect(quotaKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "instance-a"}, pending)).To(Succeed())
	g.Expect(meta.FindStatusCondition(pending.Status.Conditions, "Granted").Message).To(ContainSubstring("no active ResourceGrant"))
	g.Expect(quotaKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "instance-b"}, bad)).To(Succeed())
	g.Expect(meta.FindStatusCondition(bad.Status.Conditions, "Granted").Message).
		To(Equal("resource type compute.datumapis.com/gpus is not registered"))

	createGrant(t, quotaKube, ns, "grant", project, 1, "1", "2Gi")
	g.Eventually(func() (tally, error) { return countClaims(ctx, quotaKube, ns) }, settleTimeout, poll).
		Should(Equal(tally{Total: 2, Granted: 1, Invalid: 1}))
}

// TestTheServiceBootstrapsRegistrationsAndTheDefaultGrant checks what the
// shared service created when it first saw its plane.
func TestTheServiceBootstrapsRegistrationsAndTheDefaultGrant(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, want := range quotaservice.ComputeRegistrations() {
		reg := &quotav1alpha1.ResourceRegistration{}
		g.Eventually(func() (bool, error) {
			err := quotaKube.Get(ctx, client.ObjectKey{Name: want.Name}, reg)
			return err == nil && meta.IsStatusConditionTrue(reg.Status.Conditions, quotav1alpha1.ResourceRegistrationConditionActive), client.IgnoreNotFound(err)
		}, settleTimeout, poll).Should(BeTrue(), "registration %s is not active", want.Name)
	}
	grant := &quotav1alpha1.ResourceGrant{}
	g.Eventually(func() (bool, error) {
		err := quotaKube.Get(ctx, client.ObjectKey{Namespace: quotaservice.DefaultGrantNamespace, Name: quotaservice.DefaultGrantName}, grant)
		return err == nil && meta.IsStatusConditionTrue(grant.Status.Conditions, quotav1alpha1.ResourceGrantConditionActive), client.IgnoreNotFound(err)
	}, settleTimeout, poll).Should(BeTrue())
	g.Expect(grant.Spec.ConsumerRef.Name).To(Equal(defaultProject))
	g.Eventually(func() (map[string]quotav1alpha1.AllowanceBucketStatus, error) {
		return bucketsOf(ctx, quotaKube, defaultProject)
	}, settleTimeout, poll).Should(HaveKeyWithValue(computev1alpha.ResourceTypeMemory,
		quotav1alpha1.AllowanceBucketStatus{Limit: 81920, Available: 81920, GrantCount: 1}))
}

// TestARestartRepairsAnAllocationLeakedByACrash simulates a service that
// crashed after recording a grant in the bucket but before marking the
// claim: the restarted service holds the unexplained allocation for the
// hold grace, then releases it to the next claim in line.
func TestARestartRepairsAnAllocationLeakedByACrash(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	own := planes.StartForTest(t, planes.Options{Planes: []planes.PlaneSpec{{Name: "quota-restart", CRDDirs: []string{fixtures.ExternalCRDDir()}}}})
	cfg := own.Plane("quota-restart").Config()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: quotaKube.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	amounts, err := quotaservice.ComputeGrant(3, "40", "80Gi")
	g.Expect(err).NotTo(HaveOccurred())
	opts := quotaservice.Options{Project: "p1", DefaultGrant: amounts, HoldGrace: 3 * time.Second}

	stop := startServiceForTest(t, cfg, opts)
	for i := range 3 {
		g.Expect(c.Create(ctx, newClaim("default", fmt.Sprintf("instance-%d", i), "p1"))).To(Succeed())
	}
	g.Eventually(func() (tally, error) { return countClaims(ctx, c, "default") }, settleTimeout, poll).
		Should(Equal(tally{Total: 3, Granted: 3}))
	stop()

	// While the service is down, one granted claim goes without its
	// release being recorded, so the bucket still counts 3 while only 2
	// granted claims exist: to the restarted service, that looks like an
	// allocation leaked by a crash between a bucket write and a claim's.
	g.Expect(c.Delete(ctx, newClaim("default", "instance-0", "p1"))).To(Succeed())
	g.Expect(c.Create(ctx, newClaim("default", "instance-next", "p1"))).To(Succeed())

	mon := watchClaims(t, c, "default")
	startServiceForTest(t, cfg, opts)
	// Once the hold expires, the next claim is granted and the buckets agree...
	g.Eventually(func() (tally, error) { return countClaims(ctx, c, "default") }, settleTimeout, poll).
		Should(Equal(tally{Total: 3, Granted: 3}))
	// ...but while the unexplained allocation was held, it was denied. (The
	// monitor's watch may deliver the grant after the list above saw it.)
	g.Eventually(func() []string { return mon.reasonsOf("instance-next") }, settleTimeout, poll).Should(Equal([]string{
		quotav1alpha1.ResourceClaimReasonPendingEvaluation, quotav1alpha1.ResourceClaimReasonQuotaExceeded, quotav1alpha1.ResourceClaimReasonQuotaAvailable,
	}))
	g.Eventually(func() (quotav1alpha1.AllowanceBucketStatus, error) {
		b, err := bucketsOf(ctx, c, "p1")
		return b[computev1alpha.ResourceTypeInstances], err
	}, settleTimeout, poll).Should(Equal(quotav1alpha1.AllowanceBucketStatus{Limit: 3, Allocated: 3, ClaimCount: 3, GrantCount: 1}))
}

// TestTwoServicesRacingOnOnePlaneNeverOverGrant runs two quota services
// against one plane at once (what a split brain would look like): the
// bucket resourceVersion fence and holds keep every grant within the limit.
func TestTwoServicesRacingOnOnePlaneNeverOverGrant(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	own := planes.StartForTest(t, planes.Options{Planes: []planes.PlaneSpec{{Name: "quota-race", CRDDirs: []string{fixtures.ExternalCRDDir()}}}})
	cfg := own.Plane("quota-race").Config()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: quotaKube.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	amounts, err := quotaservice.ComputeGrant(10, "40", "80Gi")
	g.Expect(err).NotTo(HaveOccurred())
	opts := quotaservice.Options{Project: "p1", DefaultGrant: amounts}
	startServiceForTest(t, cfg, opts)
	startServiceForTest(t, cfg, opts)
	g.Eventually(func() (map[string]quotav1alpha1.AllowanceBucketStatus, error) {
		return bucketsOf(ctx, c, "p1")
	}, settleTimeout, poll).Should(Equal(figures(10, 0)))

	mon := watchClaims(t, c, "default")
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			if err := c.Create(ctx, newClaim("default", fmt.Sprintf("instance-%03d", i), "p1")); err != nil {
				t.Errorf("failed to create claim: %v", err)
			}
		})
	}
	wg.Wait()
	g.Eventually(func() (tally, error) { return countClaims(ctx, c, "default") }, settleTimeout, poll).
		Should(Equal(tally{Total: 100, Granted: 10, Exceeded: 90}))
	g.Eventually(func() (map[string]quotav1alpha1.AllowanceBucketStatus, error) {
		return bucketsOf(ctx, c, "p1")
	}, settleTimeout, poll).Should(Equal(figures(10, 10)))
	g.Eventually(func() bool { c := mon.counts(); return c[0] == 100 && c[1] >= 10 }, settleTimeout, poll).Should(BeTrue(), "the watch did not catch up")
	g.Expect(mon.peak()).To(BeNumerically("<=", 10), "two racing services granted more than the limit at once")
	t.Logf("two racing services: peak of %d live granted claims over %d watch events", mon.peak(), mon.events)
}

// grantedSet returns the sorted names of the granted live claims of ns.
func grantedSet(ctx context.Context, t *testing.T, ns string) []string {
	t.Helper()
	list := &quotav1alpha1.ResourceClaimList{}
	if err := quotaKube.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range list.Items {
		if meta.IsStatusConditionTrue(list.Items[i].Status.Conditions, "Granted") && list.Items[i].DeletionTimestamp == nil {
			out = append(out, list.Items[i].Name)
		}
	}
	sort.Strings(out)
	return out
}

// setInstances changes the instance allowance of a grant.
func setInstances(ctx context.Context, t *testing.T, grant *quotav1alpha1.ResourceGrant, n int64) {
	t.Helper()
	fresh := &quotav1alpha1.ResourceGrant{}
	if err := quotaKube.Get(ctx, client.ObjectKeyFromObject(grant), fresh); err != nil {
		t.Fatal(err)
	}
	before := fresh.DeepCopy()
	for i := range fresh.Spec.Allowances {
		if fresh.Spec.Allowances[i].ResourceType == computev1alpha.ResourceTypeInstances {
			fresh.Spec.Allowances[i].Buckets = []quotav1alpha1.Bucket{{Amount: n}}
		}
	}
	if err := quotaKube.Patch(ctx, fresh, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// TestAClaimAnEarlierVersionGrantedIsReleasedOnDelete: a claim that carries
// the finalizer earlier versions of the service put on granted claims is
// still released when deleted: the service records the release in the
// buckets, removes the finalizer, and grants the next claim in line.
func TestAClaimAnEarlierVersionGrantedIsReleasedOnDelete(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	project := uniqueName("p-legacy")
	ns := project
	ensureNamespace(t, quotaKube, ns, nil)
	createGrant(t, quotaKube, ns, "grant", project, 1, "40", "80Gi")
	g.Eventually(func() (map[string]quotav1alpha1.AllowanceBucketStatus, error) {
		return bucketsOf(ctx, quotaKube, project)
	}, settleTimeout, poll).Should(Equal(figures(1, 0)))

	old := newClaim(ns, "instance-a", project)
	old.Finalizers = []string{quotaservice.Finalizer}
	g.Expect(quotaKube.Create(ctx, old)).To(Succeed())
	g.Eventually(func() (tally, error) { return countClaims(ctx, quotaKube, ns) }, settleTimeout, poll).
		Should(Equal(tally{Total: 1, Granted: 1}))
	g.Expect(quotaKube.Create(ctx, newClaim(ns, "instance-b", project))).To(Succeed())
	g.Eventually(func() (tally, error) { return countClaims(ctx, quotaKube, ns) }, settleTimeout, poll).
		Should(Equal(tally{Total: 2, Granted: 1, Exceeded: 1}))

	g.Expect(quotaKube.Delete(ctx, old)).To(Succeed())
	g.Eventually(func() error {
		return quotaKube.Get(ctx, client.ObjectKeyFromObject(old), &quotav1alpha1.ResourceClaim{})
	}, settleTimeout, poll).Should(MatchError(ContainSubstring("not found")), "the deleted claim must go")
	g.Eventually(func() ([]string, error) { return grantedSet(ctx, t, ns), nil }, settleTimeout, poll).
		Should(Equal([]string{"instance-b"}))
	g.Eventually(func() (map[string]quotav1alpha1.AllowanceBucketStatus, error) {
		return bucketsOf(ctx, quotaKube, project)
	}, settleTimeout, poll).Should(Equal(figures(1, 1)))
}

// TestAnEditedBucketIsSetRight: the service writes buckets from its own
// copies rather than reading them every pass, yet a bucket someone else
// edits is read again and rewritten from the granted claims, and the next
// grant is still fenced and counted right.
func TestAnEditedBucketIsSetRight(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	project := uniqueName("p-edited")
	ns := project
	ensureNamespace(t, quotaKube, ns, nil)
	createGrant(t, quotaKube, ns, "grant", project, 3, "40", "80Gi")
	for i := range 2 {
		g.Expect(quotaKube.Create(ctx, newClaim(ns, fmt.Sprintf("instance-%d", i), project))).To(Succeed())
	}
	g.Eventually(func() (map[string]quotav1alpha1.AllowanceBucketStatus, error) {
		return bucketsOf(ctx, quotaKube, project)
	}, settleTimeout, poll).Should(Equal(figures(3, 2)))

	// Someone zeroes the instances bucket.
	list := &quotav1alpha1.AllowanceBucketList{}
	g.Expect(quotaKube.List(ctx, list, client.InNamespace(quotaservice.DefaultBucketNamespace))).To(Succeed())
	var edited *quotav1alpha1.AllowanceBucket
	for i := range list.Items {
		b := &list.Items[i]
		if b.Spec.ConsumerRef.Name == project && b.Spec.ResourceType == computev1alpha.ResourceTypeInstances {
			edited = b
		}
	}
	g.Expect(edited).NotTo(BeNil())
	edited.Status.Allocated, edited.Status.Available, edited.Status.ClaimCount = 0, 3, 0
	g.Expect(quotaKube.Status().Update(ctx, edited)).To(Succeed())

	g.Eventually(func() (map[string]quotav1alpha1.AllowanceBucketStatus, error) {
		return bucketsOf(ctx, quotaKube, project)
	}, settleTimeout, poll).Should(Equal(figures(3, 2)), "the edited bucket must be rewritten from the granted claims")

	mon := watchClaims(t, quotaKube, ns)
	for i := 2; i < 5; i++ {
		g.Expect(quotaKube.Create(ctx, newClaim(ns, fmt.Sprintf("instance-%d", i), project))).To(Succeed())
	}
	g.Eventually(func() (tally, error) { return countClaims(ctx, quotaKube, ns) }, settleTimeout, poll).
		Should(Equal(tally{Total: 5, Granted: 3, Exceeded: 2}))
	g.Eventually(func() (map[string]quotav1alpha1.AllowanceBucketStatus, error) {
		return bucketsOf(ctx, quotaKube, project)
	}, settleTimeout, poll).Should(Equal(figures(3, 3)))
	g.Eventually(func() int { return mon.counts()[0] }, settleTimeout, poll).Should(Equal(5))
	g.Expect(mon.peak()).To(BeNumerically("<=", 3))
}
