package quota_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/quota"
	"github.com/citycells/compute/internal/standin/quotaservice"
	"github.com/citycells/compute/test/clitest"
	"github.com/citycells/compute/test/integration/fixtures"
)

// cellName is the cell the Clients under test run in.
const cellName = "cell-dfw"

// cellNamespace creates a cell namespace whose labels say its Instances
// belong to project's claimNS; without a project it carries no labels.
func cellNamespace(t *testing.T, project, claimNS string) string {
	t.Helper()
	name := "ns-" + rand.String(8)
	var labels map[string]string
	if project != "" {
		labels = map[string]string{
			computev1alpha.UpstreamClusterNameLabel: names.UpstreamClusterName(project),
			computev1alpha.UpstreamNamespaceLabel:   claimNS,
		}
	}
	ensureNamespace(t, cellKube, name, labels)
	return name
}

// projectNamespace creates a project namespace of the quota plane binding
// the city the cell under test serves (DFW): compute-quota grants a cell's
// claims only where the project binds a city the cell serves.
func projectNamespace(t *testing.T, name string) {
	t.Helper()
	ensureNamespace(t, quotaKube, name, nil)
	if err := clitest.BindCities(context.Background(), quotaKube, name, quotaservice.CellCity(cellName)); err != nil {
		t.Fatalf("failed to bind %s in namespace %s: %v", quotaservice.CellCity(cellName), name, err)
	}
}

// newInstance returns a d1-standard-2 Instance in a cell namespace.
func newInstance(ns, name string) *computev1alpha.Instance {
	return &computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(rand.String(16)), Generation: 1},
		Spec: computev1alpha.InstanceSpec{Runtime: computev1alpha.InstanceRuntimeSpec{
			Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
			Sandbox:   &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: "nginx"}}},
		}},
	}
}

// newQuotaClient returns a Client of the cell reaching projects through p.
func newQuotaClient(t *testing.T, p quota.Planes) *quota.Client {
	t.Helper()
	c, err := quota.NewClient(quota.Options{SourceCluster: cellName, Reader: cellKube, Planes: p})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sharedPlanes reaches every project through the shared quota plane.
func sharedPlanes() quota.Planes {
	return quota.NewStaticPlanes(nil, quotaCfg)
}

// evaluate returns what Evaluate answers, for Eventually.
func evaluate(c *quota.Client, inst *computev1alpha.Instance) func() (string, error) {
	return func() (string, error) {
		cond, err := c.Evaluate(logCtx(), inst)
		return string(cond.Status) + "/" + cond.Reason, err
	}
}

// logCtx is a context with the test logger.
func logCtx() context.Context {
	return ctrl.LoggerInto(context.Background(), logger())
}

// TestTheClientClaimsGrantsAndReleases follows Instances through the whole
// claim lifecycle against the quota service.
func TestTheClientClaimsGrantsAndReleases(t *testing.T) {
	g := NewWithT(t)
	ctx := logCtx()
	project := uniqueName("p-client")
	projectNamespace(t, project)
	createGrant(t, quotaKube, project, project, project, 2, "40", "80Gi")
	ns := cellNamespace(t, project, project)
	c := newQuotaClient(t, sharedPlanes())

	a, b, x := newInstance(ns, "web-dfw-0a1b2c3d-0"), newInstance(ns, "web-dfw-0a1b2c3d-1"), newInstance(ns, "web-dfw-0a1b2c3d-2")
	cond, err := c.Evaluate(ctx, a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cond.Reason).To(Equal(computev1alpha.ReasonPendingEvaluation), "a fresh claim waits for evaluation")
	g.Eventually(evaluate(c, a), settleTimeout, poll).Should(Equal("True/QuotaAvailable"))
	g.Eventually(evaluate(c, b), settleTimeout, poll).Should(Equal("True/QuotaAvailable"))
	g.Eventually(evaluate(c, x), settleTimeout, poll).Should(Equal("False/QuotaExceeded"))
	cond, _ = c.Evaluate(ctx, x)
	g.Expect(cond.Message).To(ContainSubstring("requested 1 compute.datumapis.com/instances, 0 of 2 available"))

	claim := &quotav1alpha1.ResourceClaim{}
	g.Expect(quotaKube.Get(ctx, client.ObjectKey{Namespace: project, Name: "instance-web-dfw-0a1b2c3d-0"}, claim)).To(Succeed())
	g.Expect(claim.Labels).To(Equal(map[string]string{
		computev1alpha.InstanceNamespaceLabel: ns,
		computev1alpha.SourceClusterLabel:     cellName,
	}))
	g.Expect(claim.Annotations).To(HaveKeyWithValue(quota.InstanceUIDAnnotation, string(a.UID)))
	g.Expect(claim.Spec.ConsumerRef).To(Equal(quota.ProjectRef(project)))
	g.Expect(claim.Spec.Requests).To(ConsistOf(
		quotav1alpha1.ResourceRequest{ResourceType: computev1alpha.ResourceTypeInstances, Amount: 1},
		quotav1alpha1.ResourceRequest{ResourceType: computev1alpha.ResourceTypeVCPUs, Amount: 1000},
		quotav1alpha1.ResourceRequest{ResourceType: computev1alpha.ResourceTypeMemory, Amount: 2048},
	))

	// Releasing one grant lets the denied Instance in.
	g.Expect(c.Release(ctx, a)).To(Succeed())
	g.Eventually(func() (*quotav1alpha1.ResourceClaim, error) { return c.Get(ctx, a) }, settleTimeout, poll).Should(BeNil())
	g.Eventually(evaluate(c, x), settleTimeout, poll).Should(Equal("True/QuotaAvailable"))
	g.Expect(c.Release(ctx, a)).To(Succeed(), "releasing a released claim is not an error")
}

// TestTheClientReplacesAClaimAnEarlierInstanceLeft recreates an Instance
// under its old name (as a rollout does): the old claim is deleted, not
// adopted, and the new Instance gets its own.
func TestTheClientReplacesAClaimAnEarlierInstanceLeft(t *testing.T) {
	g := NewWithT(t)
	ctx := logCtx()
	project := uniqueName("p-recreate")
	projectNamespace(t, project)
	createGrant(t, quotaKube, project, project, project, 1, "40", "80Gi")
	ns := cellNamespace(t, project, project)
	c := newQuotaClient(t, sharedPlanes())

	old := newInstance(ns, "web-dfw-0a1b2c3d-0")
	g.Eventually(evaluate(c, old), settleTimeout, poll).Should(Equal("True/QuotaAvailable"))
	renewed := newInstance(ns, old.Name)
	cond, err := c.Evaluate(ctx, renewed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cond.Reason).To(Equal(computev1alpha.ReasonPendingEvaluation))
	g.Expect(cond.Message).To(ContainSubstring("previous ResourceClaim"))
	g.Eventually(evaluate(c, renewed), settleTimeout, poll).Should(Equal("True/QuotaAvailable"))
	claim, err := c.Get(ctx, renewed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claim.Annotations).To(HaveKeyWithValue(quota.InstanceUIDAnnotation, string(renewed.UID)))
}

// TestTheClientNeverTouchesAnotherCellsClaim puts a claim of the same name
// from another cell in the way: it is neither adopted nor deleted.
func TestTheClientNeverTouchesAnotherCellsClaim(t *testing.T) {
	g := NewWithT(t)
	ctx := logCtx()
	project := uniqueName("p-collide")
	projectNamespace(t, project)
	ns := cellNamespace(t, project, project)
	inst := newInstance(ns, "web-dfw-0a1b2c3d-0")
	theirs := newClaim(project, quota.ClaimName(inst), project)
	theirs.Labels = map[string]string{computev1alpha.SourceClusterLabel: "cell-dfw-2", computev1alpha.InstanceNamespaceLabel: ns}
	g.Expect(quotaKube.Create(ctx, theirs)).To(Succeed())
	c := newQuotaClient(t, sharedPlanes())

	before := counterValue(t, quota.EvalFailuresMetric, map[string]string{"reason": computev1alpha.ReasonQuotaMisconfigured})
	cond, err := c.Evaluate(ctx, inst)
	g.Expect(errors.Is(err, quota.ErrForeignClaim)).To(BeTrue(), "error %v", err)
	g.Expect(cond.Reason).To(Equal(computev1alpha.ReasonQuotaMisconfigured))
	g.Expect(cond.Message).To(ContainSubstring(`was made by cell "cell-dfw-2"`))
	g.Expect(counterValue(t, quota.EvalFailuresMetric, map[string]string{"reason": computev1alpha.ReasonQuotaMisconfigured})).To(Equal(before + 1))

	g.Expect(c.Release(ctx, inst)).To(Succeed())
	still := &quotav1alpha1.ResourceClaim{}
	g.Expect(quotaKube.Get(ctx, client.ObjectKeyFromObject(theirs), still)).To(Succeed())
	g.Expect(still.DeletionTimestamp).To(BeNil(), "another cell's claim was deleted")
	g.Expect(still.UID).To(Equal(theirs.UID))
}

// TestEveryFailureReasonForReal reproduces each QuotaGranted failure with a
// real cause: each must fail closed, say why, and be counted.
func TestEveryFailureReasonForReal(t *testing.T) {
	ctx := logCtx()
	projectNamespace(t, "web")

	tests := map[string]struct {
		setup      func(t *testing.T) (*quota.Client, *computev1alpha.Instance)
		wantReason string
		wantStatus metav1.ConditionStatus
		wantInMsg  string
		wantErr    bool
	}{
		"a stopped quota apiserver means the backend is unavailable": {
			setup: func(t *testing.T) (*quota.Client, *computev1alpha.Instance) {
				down, err := planes.Start(context.Background(), planes.Options{Planes: []planes.PlaneSpec{{Name: "quota-down", CRDDirs: []string{fixtures.ExternalCRDDir()}}}})
				if err != nil {
					t.Fatal(err)
				}
				cfg := down.Plane("quota-down").Config()
				down.Stop()
				return newQuotaClient(t, quota.NewStaticPlanes(nil, cfg)), newInstance(cellNamespace(t, "p-down", "web"), "web-0")
			},
			wantReason: computev1alpha.ReasonQuotaBackendUnavailable, wantStatus: metav1.ConditionUnknown,
			wantInMsg: `cannot reach the quota plane of project "p-down"`, wantErr: true,
		},
		"a claim namespace missing in the quota plane is reported": {
			setup: func(t *testing.T) (*quota.Client, *computev1alpha.Instance) {
				return newQuotaClient(t, sharedPlanes()), newInstance(cellNamespace(t, "p-nons", "no-such-namespace"), "web-0")
			},
			wantReason: computev1alpha.ReasonQuotaNamespaceNotFound, wantStatus: metav1.ConditionFalse,
			wantInMsg: `namespace "no-such-namespace" does not exist in the quota plane of project "p-nons"`, wantErr: true,
		},
		"an identity RBAC does not allow to claim means quota is misconfigured": {
			setup: func(t *testing.T) (*quota.Client, *computev1alpha.Instance) {
				cfg, err := env.Plane("quota").ClientConfig("cell-without-rbac")
				if err != nil {
					t.Fatal(err)
				}
				return newQuotaClient(t, quota.NewStaticPlanes(nil, cfg)), newInstance(cellNamespace(t, "p-rbac", "web"), "web-0")
			},
			wantReason: computev1alpha.ReasonQuotaMisconfigured, wantStatus: metav1.ConditionFalse,
			wantInMsg: "forbidden", wantErr: true,
		},
		"a claim the quota API rejects as invalid means quota is misconfigured": {
			setup: func(t *testing.T) (*quota.Client, *computev1alpha.Instance) {
				return newQuotaClient(t, sharedPlanes()), newInstance(cellNamespace(t, "p-invalid", "web"), strings.Repeat("a", 250))
			},
			wantReason: computev1alpha.ReasonQuotaMisconfigured, wantStatus: metav1.ConditionFalse,
			wantInMsg: "Invalid value", wantErr: true,
		},
		"a cell namespace without project labels makes the project unresolvable": {
			setup: func(t *testing.T) (*quota.Client, *computev1alpha.Instance) {
				return newQuotaClient(t, sharedPlanes()), newInstance(cellNamespace(t, "", ""), "web-0")
			},
			wantReason: computev1alpha.ReasonQuotaProjectIDUnresolvable, wantStatus: metav1.ConditionFalse,
			wantInMsg: "has no meta.datumapis.com/upstream-cluster-name label", wantErr: true,
		},
		"a project Milo does not know is not found": {
			setup: func(t *testing.T) (*quota.Client, *computev1alpha.Instance) {
				p, err := quota.NewMiloPlanes(&rest.Config{Host: miloProxy(t, nil).URL})
				if err != nil {
					t.Fatal(err)
				}
				return newQuotaClient(t, p), newInstance(cellNamespace(t, "p-unknown", "web"), "web-0")
			},
			wantReason: computev1alpha.ReasonQuotaProjectNotFound, wantStatus: metav1.ConditionFalse,
			wantInMsg: `project "p-unknown" has no quota control plane`, wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			c, inst := tc.setup(t)
			before := counterValue(t, quota.EvalFailuresMetric, map[string]string{"reason": tc.wantReason})
			cond, err := c.Evaluate(ctx, inst)
			g.Expect(err != nil).To(Equal(tc.wantErr), "error %v", err)
			g.Expect(cond.Reason).To(Equal(tc.wantReason), "message %q", cond.Message)
			g.Expect(cond.Status).To(Equal(tc.wantStatus))
			g.Expect(cond.Message).To(ContainSubstring(tc.wantInMsg))
			g.Expect(counterValue(t, quota.EvalFailuresMetric, map[string]string{"reason": tc.wantReason})).To(Equal(before+1),
				"the failure is counted once under its reason")
		})
	}
}

// TestAProjectWithoutAGrantHasNoBudget: the quota service evaluates the
// claim and leaves it pending, which the Client reports as QuotaNoBudget,
// an answer rather than a failure; a grant then admits the Instance.
func TestAProjectWithoutAGrantHasNoBudget(t *testing.T) {
	g := NewWithT(t)
	ctx := logCtx()
	project := uniqueName("p-nogrant")
	projectNamespace(t, project)
	c := newQuotaClient(t, sharedPlanes())
	inst := newInstance(cellNamespace(t, project, project), "web-0")
	g.Eventually(evaluate(c, inst), settleTimeout, poll).Should(Equal("Unknown/QuotaNoBudget"))
	cond, err := c.Evaluate(ctx, inst)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cond.Message).To(ContainSubstring("no active ResourceGrant gives this consumer any"))

	createGrant(t, quotaKube, project, project, project, 1, "1", "2Gi")
	g.Eventually(evaluate(c, inst), settleTimeout, poll).Should(Equal("True/QuotaAvailable"))
}

// TestReleasingAnUnresolvableProjectOrphansTheClaim: the Instance can go,
// the orphan is counted.
func TestReleasingAnUnresolvableProjectOrphansTheClaim(t *testing.T) {
	g := NewWithT(t)
	c := newQuotaClient(t, sharedPlanes())
	inst := newInstance(cellNamespace(t, "", ""), "web-0")
	before := counterValue(t, quota.ClaimOrphanedMetric, nil)
	err := c.Release(logCtx(), inst)
	g.Expect(errors.Is(err, quota.ErrClaimOrphaned)).To(BeTrue(), "error %v", err)
	g.Expect(counterValue(t, quota.ClaimOrphanedMetric, nil)).To(Equal(before + 1))

	// A stopped backend is not an orphan: the release must be retried.
	down, startErr := planes.Start(context.Background(), planes.Options{Planes: []planes.PlaneSpec{{Name: "quota-gone", CRDDirs: []string{fixtures.ExternalCRDDir()}}}})
	g.Expect(startErr).NotTo(HaveOccurred())
	cfg := down.Plane("quota-gone").Config()
	down.Stop()
	err = newQuotaClient(t, quota.NewStaticPlanes(nil, cfg)).Release(logCtx(), newInstance(cellNamespace(t, "p-gone", "web"), "web-0"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, quota.ErrClaimOrphaned)).To(BeFalse())
	g.Expect(quota.Reason(err)).To(Equal(computev1alpha.ReasonQuotaBackendUnavailable))
}

// TestMiloPlanesReachAProjectThroughItsControlPlanePath claims through
// Milo's URL scheme, served by a proxy in front of the quota plane.
func TestMiloPlanesReachAProjectThroughItsControlPlanePath(t *testing.T) {
	g := NewWithT(t)
	project := uniqueName("p-milo")
	projectNamespace(t, project)
	createGrant(t, quotaKube, project, project, project, 1, "1", "2Gi")
	p, err := quota.NewMiloPlanes(&rest.Config{Host: miloProxy(t, map[string]*rest.Config{project: quotaCfg}).URL})
	g.Expect(err).NotTo(HaveOccurred())
	c := newQuotaClient(t, p)
	inst := newInstance(cellNamespace(t, project, project), "web-0")
	g.Eventually(evaluate(c, inst), settleTimeout, poll).Should(Equal("True/QuotaAvailable"))
	g.Expect(c.Release(logCtx(), inst)).To(Succeed())
	g.Eventually(func() (*quotav1alpha1.ResourceClaim, error) { return c.Get(logCtx(), inst) }, settleTimeout, poll).Should(BeNil())
}

// TestWatchSourcesEnqueueTheOwningInstance: a grant written by the quota
// service reaches the cell as a request for the Instance.
func TestWatchSourcesEnqueueTheOwningInstance(t *testing.T) {
	g := NewWithT(t)
	project := uniqueName("p-watch")
	projectNamespace(t, project)
	createGrant(t, quotaKube, project, project, project, 1, "1", "2Gi")
	c := newQuotaClient(t, quota.NewStaticPlanes(map[string]*rest.Config{project: quotaCfg}, nil))
	inst := newInstance(cellNamespace(t, project, project), "web-0")

	mgr, err := manager.New(cellCfg, manager.Options{
		Scheme: quotaKube.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, Logger: logger(),
	})
	g.Expect(err).NotTo(HaveOccurred())
	sources, err := c.WatchSources(mgr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sources).To(HaveLen(1))
	requests := make(chan reconcile.Request, 100)
	b := builder.ControllerManagedBy(mgr).Named("watch-probe-" + rand.String(4))
	for _, s := range sources {
		b = b.WatchesRawSource(s)
	}
	g.Expect(b.Complete(reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		requests <- req
		return reconcile.Result{}, nil
	}))).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	_, _ = c.Evaluate(logCtx(), inst)
	want := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: inst.Namespace, Name: inst.Name}}
	g.Eventually(requests, settleTimeout).Should(Receive(Equal(want)))
	g.Eventually(evaluate(c, inst), settleTimeout, poll).Should(Equal("True/QuotaAvailable"))
}

// miloProxy serves Milo's per-project URL scheme: projects it knows are
// forwarded to their plane, any other answers 404 for the project.
func miloProxy(t *testing.T, projects map[string]*rest.Config) *httptest.Server {
	t.Helper()
	const prefix = "/apis/resourcemanager.miloapis.com/v1alpha1/projects/"
	proxies := map[string]*httputil.ReverseProxy{}
	for name, cfg := range projects {
		target, err := url.Parse(cfg.Host)
		if err != nil {
			t.Fatal(err)
		}
		transport, err := rest.TransportFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		proxies[name] = &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				rest := strings.TrimPrefix(r.In.URL.Path, prefix+name+"/control-plane")
				r.SetURL(target)
				r.Out.URL.Path, r.Out.URL.RawPath = rest, ""
			},
			Transport:     transport,
			FlushInterval: -1,
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, prefix)
		project, _, _ := strings.Cut(rest, "/")
		if p, known := proxies[project]; ok && known {
			p.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: `projects.resourcemanager.miloapis.com "` + project + `" not found`,
			Details: &metav1.StatusDetails{Name: project, Group: quota.ProjectAPIGroup, Kind: "projects"},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestAGrantedClaimOutlivesItsInstanceTypeLeavingTheCatalog: a cell whose
// catalog lacks an Instance's type (upgraded before the InstanceTypes were
// published, or not reached by them yet) keeps the claim it made; only a
// new Instance of that type cannot be sized.
func TestAGrantedClaimOutlivesItsInstanceTypeLeavingTheCatalog(t *testing.T) {
	g := NewWithT(t)
	ctx := logCtx()
	project := uniqueName("p-catalog")
	projectNamespace(t, project)
	createGrant(t, quotaKube, project, project, project, 5, "40", "80Gi")
	ns := cellNamespace(t, project, project)
	c := newQuotaClient(t, sharedPlanes())

	it := &computev1alpha.InstanceType{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("transient")},
		Spec: computev1alpha.InstanceTypeSpec{
			Resources: computev1alpha.InstanceTypeResources{CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi")},
			Lifecycle: computev1alpha.InstanceTypeLifecycle{Phase: computev1alpha.InstanceTypePhaseActive},
		},
	}
	g.Expect(cellKube.Create(ctx, it)).To(Succeed())
	onTransient := func(inst *computev1alpha.Instance) *computev1alpha.Instance {
		inst.Spec.Runtime.Resources.InstanceType = it.Name
		return inst
	}
	a := onTransient(newInstance(ns, "web-dfw-0a1b2c3d-0"))
	g.Eventually(evaluate(c, a), settleTimeout, poll).Should(Equal("True/QuotaAvailable"))

	g.Expect(cellKube.Delete(ctx, it)).To(Succeed())
	g.Eventually(func() error {
		return cellKube.Get(ctx, client.ObjectKeyFromObject(it), &computev1alpha.InstanceType{})
	}, settleTimeout, poll).ShouldNot(Succeed())
	g.Consistently(evaluate(c, a), 2*time.Second, poll).Should(Equal("True/QuotaAvailable"))

	b := onTransient(newInstance(ns, "web-dfw-0a1b2c3d-1"))
	cond, err := c.Evaluate(ctx, b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cond.Reason).To(Equal(computev1alpha.ReasonValidationFailed))
	g.Expect(cond.Message).To(ContainSubstring(it.Name))
}
