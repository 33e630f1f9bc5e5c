//go:build e2e

package compute

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/internal/metricsdoc"
)

// scrapedManager is one running compute-manager or compute-quota and what
// it serves on /metrics.
type scrapedManager struct {
	name, plane, address string
	// role is metricsdoc.RoleManagement, RoleCell or "quota" (compute-quota,
	// which serves only the series of every manager).
	role string
	// token may get /metrics on the manager's plane.
	token string
}

// TestManagersServeEveryDocumentedSeries rolls a Workload out in waves, then
// scrapes every compute-manager and compute-quota of the platform over
// HTTPS, as Prometheus does (a ServiceAccount token allowed to get
// /metrics), and checks that each serves every series docs/metrics.md says
// its role always serves, and that the rollout, the template's way to the
// cells and the status's way back were observed.
func TestManagersServeEveryDocumentedSeries(t *testing.T) {
	g := NewWithT(t)
	doc, err := metricsdoc.Read()
	g.Expect(err).NotTo(HaveOccurred())
	managers := runningManagers(t)

	ns := newProjectNamespace(t)
	b := makeWorkload(ns.name, "metered").withPlacement("edge", 1, "DFW", "LHR")
	b.w.Spec.Rollout = &computev1alpha.WorkloadRollout{
		Strategy:    computev1alpha.WavesCityRollout,
		Waves:       []computev1alpha.RolloutWave{{CityCodes: []string{"DFW"}}, {CityCodes: []string{"LHR"}}},
		SoakSeconds: ptr.To(int32(2)),
	}
	w := b.create(t)
	expectAvailable(t, w, counts{deployments: 2, replicas: 2, ready: 2, desired: 2, updated: 2})
	updateWorkload(t, w, func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "ghcr.io/citycells/hello:2.0"
	})
	got := &computev1alpha.Workload{}
	g.Eventually(func(g Gomega) {
		g.Expect(project.Get(t.Context(), client.ObjectKeyFromObject(w), got)).To(Succeed())
		g.Expect(got.Status.Rollout).NotTo(BeNil())
		g.Expect(got.Status.Rollout.TemplateHash).NotTo(BeEmpty())
		g.Expect(got.Status.Rollout.Phase).To(Equal(computev1alpha.RolloutPhaseComplete))
		g.Expect(got.Status.Rollout.Revision).To(BeNumerically(">=", 2))
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())

	scrapes := map[string]samples{}
	for _, m := range managers {
		g.Eventually(func(g Gomega) {
			s, err := scrape(m)
			g.Expect(err).NotTo(HaveOccurred())
			for _, series := range doc.Series {
				if series.Always && (series.Role == metricsdoc.RoleAll || series.Role == m.role) {
					g.Expect(s.families).To(HaveKey(series.Name), "%s serves no %s", m.name, series.Name)
				}
			}
			scrapes[m.name] = s
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	}

	management, cellsSeen := 0.0, map[string]float64{}
	for _, m := range managers {
		s := scrapes[m.name]
		g.Expect(s.sum("compute_build_info", nil)).To(Equal(1.0), "%s: compute_build_info", m.name)
		switch m.role {
		case metricsdoc.RoleManagement:
			management += s.sum("compute_rollout_duration_seconds_count", map[string]string{"strategy": "Waves", "result": "Complete"})
			for _, city := range []string{"DFW", "LHR"} {
				g.Expect(s.sum("compute_city_reachable", map[string]string{"city": city})).To(Equal(1.0), "%s: %s reachable", m.name, city)
			}
			g.Expect(s.sum("compute_rollout_wave_duration_seconds_count", map[string]string{"strategy": "Waves"})).To(BeNumerically(">=", 1),
				"%s: the first wave finished", m.name)
			g.Expect(s.sum("compute_projection_lag_seconds_count", nil)).To(BeNumerically(">=", 1), "%s: projections observed", m.name)
		case metricsdoc.RoleCell:
			cellsSeen[m.plane] = s.sum("compute_management_to_cell_lag_seconds_count", nil)
		}
	}
	g.Expect(management).To(BeNumerically(">=", 1), "the completed rollout was observed")
	for _, city := range []string{"DFW", "LHR"} {
		plane := platform.CellPlane(city)
		g.Expect(cellsSeen[plane]).To(BeNumerically(">=", 2), "%s: the first template and the new one reached the cell", plane)
		g.Expect(scrapes[componentOf(managers, plane)].sum("compute_writeback_lag_seconds_count", nil)).To(BeNumerically(">=", 1),
			"%s: Instance status was written back", plane)
	}
}

// runningManagers finds every compute-manager and compute-quota of the
// platform, their metrics address (--metrics-bind-address) and a token
// allowed to scrape them.
func runningManagers(t *testing.T) []scrapedManager {
	t.Helper()
	tokens := map[string]string{}
	out := make([]scrapedManager, 0, len(local.State().Components))
	for _, c := range local.State().Components {
		var role string
		switch {
		case strings.HasPrefix(c.Name, "compute-manager-"+platform.ProjectPlane("")):
			role = metricsdoc.RoleManagement
		case strings.HasPrefix(c.Name, "compute-manager-"):
			role = metricsdoc.RoleCell
		case strings.HasPrefix(c.Name, "compute-quota-"):
			role = "quota"
		default:
			continue
		}
		m := scrapedManager{name: c.Name, plane: c.Plane, role: role}
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--metrics-bind-address="); ok {
				m.address = v
			}
		}
		if m.address == "" || m.plane == "" {
			t.Fatalf("%s has no --metrics-bind-address or plane: %v", c.Name, c.Args)
		}
		if tokens[m.plane] == "" {
			tokens[m.plane] = scraperToken(t, m.plane)
		}
		m.token = tokens[m.plane]
		out = append(out, m)
	}
	roles := map[string]int{}
	for _, m := range out {
		roles[m.role]++
	}
	if roles[metricsdoc.RoleManagement] == 0 || roles[metricsdoc.RoleCell] != len(cities) {
		t.Fatalf("found managers %v, want a management role and a cell role per city", roles)
	}
	return out
}

// scraperToken returns a token of a ServiceAccount of plane allowed to get
// /metrics, as docs/install.md binds Prometheus'.
func scraperToken(t *testing.T, plane string) string {
	t.Helper()
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(local.Config(plane))
	if err != nil {
		t.Fatal(err)
	}
	const name, namespace = "e2e-metrics-scraper", "default"
	objects := []func() error{
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
				Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}}}, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range objects {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: %v", plane, err)
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("%s: failed to request a token: %v", plane, err)
	}
	return tr.Status.Token
}

// samples are the lines of one scrape.
type samples struct {
	// families are the metric families with a # TYPE line.
	families map[string]string
	lines    []string
}

// scrape gets m's /metrics over HTTPS (its certificate is self-signed).
func scrape(m scrapedManager) (samples, error) {
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the managers' self-signed serving certificate
	}}
	req, err := http.NewRequest(http.MethodGet, "https://"+m.address+"/metrics", nil)
	if err != nil {
		return samples{}, err
	}
	req.Header.Set("Authorization", "Bearer "+m.token)
	resp, err := hc.Do(req)
	if err != nil {
		return samples{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return samples{}, fmt.Errorf("%s: GET /metrics: %s: %s", m.name, resp.Status, body)
	}
	s := samples{families: map[string]string{}}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if name, typ, ok := strings.Cut(rest, " "); ok {
				s.families[name] = typ
			}
			continue
		}
		if line != "" && !strings.HasPrefix(line, "#") {
			s.lines = append(s.lines, line)
		}
	}
	return s, sc.Err()
}

// sum adds the values of the samples of name whose labels include labels.
func (s samples) sum(name string, labels map[string]string) float64 {
	total := 0.0
	for _, line := range s.lines {
		i := strings.LastIndex(line, " ")
		if i < 0 {
			continue
		}
		series, value := line[:i], line[i+1:]
		metric, lbls, _ := strings.Cut(series, "{")
		if metric != name {
			continue
		}
		match := true
		for k, v := range labels {
			if !strings.Contains(lbls, k+"="+strconv.Quote(v)) {
				match = false
			}
		}
		if f, err := strconv.ParseFloat(value, 64); err == nil && match {
			total += f
		}
	}
	return total
}

// componentOf returns the name of the manager running on plane in the cell
// role.
func componentOf(managers []scrapedManager, plane string) string {
	for _, m := range managers {
		if m.plane == plane && m.role == metricsdoc.RoleCell {
			return m.name
		}
	}
	return ""
}
