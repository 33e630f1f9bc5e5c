package debugapi

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestParseTarget(t *testing.T) {
	for name, tc := range map[string]struct {
		path string
		want target
		ok   bool
	}{
		"a log":                     {"namespaces/default/instances/web-dfw-0/log", target{"default", "web-dfw-0", "log"}, true},
		"an exec":                   {"namespaces/default/instances/web-dfw-0/exec", target{"default", "web-dfw-0", "exec"}, true},
		"another subresource":       {"namespaces/default/instances/web-dfw-0/status", target{}, false},
		"no subresource":            {"namespaces/default/instances/web-dfw-0", target{}, false},
		"not instances":             {"namespaces/default/pods/web-dfw-0/log", target{}, false},
		"a path that climbs out":    {"namespaces/default/instances/../log", target{}, false},
		"an empty namespace":        {"namespaces//instances/x/log", target{}, false},
		"too long":                  {"namespaces/default/instances/x/log/more", target{}, false},
		"a cluster-scoped instance": {"instances/x/log", target{}, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := parseTarget(tc.path)
			if ok != tc.ok || got != tc.want {
				t.Errorf("got %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// hub stands in for Karmada's aggregated apiserver: it lists Clusters and
// answers the cluster proxy with a log, recording what it was asked.
type hub struct {
	mu    sync.Mutex
	calls []*http.Request
	delay time.Duration
}

func (h *hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.calls = append(h.calls, r.Clone(context.Background()))
	h.mu.Unlock()
	if r.URL.Path == "/apis/cluster.karmada.io/v1alpha1/clusters" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"ClusterList","metadata":{},"items":[`+
			`{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"Cluster","metadata":{"name":"cell-dfw"}}]}`)
		return
	}
	select {
	case <-time.After(h.delay):
	case <-r.Context().Done():
		return
	}
	_, _ = fmt.Fprint(w, "line 1\nline 2\n")
}

func (h *hub) proxied() []*http.Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*http.Request
	for _, c := range h.calls {
		if strings.Contains(c.URL.Path, "/proxy/") {
			out = append(out, c)
		}
	}
	return out
}

func projectObjects(stale bool) []runtime.Object {
	labels := map[string]string{
		computev1alpha.CityCodeLabel: "DFW", computev1alpha.WorkloadNameLabel: "web",
		computev1alpha.WorkloadDeploymentNameLabel: "web-dfw", computev1alpha.ProjectionLabel: "true",
	}
	inst := &computev1alpha.Instance{ObjectMeta: metav1.ObjectMeta{Name: "web-dfw-0", Namespace: "default", Labels: labels}}
	wd := &computev1alpha.WorkloadDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web-dfw", Namespace: "default",
		Annotations: map[string]string{computev1alpha.FederationNamespaceAnnotation: "ns-1234"}}}
	w := &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
	w.Status.Placements = []computev1alpha.WorkloadPlacementStatus{{Cities: []computev1alpha.WorkloadCityStatus{{CityCode: "DFW", Stale: stale}}}}
	return []runtime.Object{inst, wd, w}
}

// newTestServer returns a Server whose tenants are named by the
// X-Test-User header and may what allowed says (user → subresources).
func newTestServer(t *testing.T, h *hub, stale bool, allowed map[string][]string) *Server {
	t.Helper()
	s := runtimeScheme(t)
	project := crfake.NewClientBuilder().WithScheme(s).WithRuntimeObjects(projectObjects(stale)...).Build()
	cs := fake.NewClientset()
	cs.PrependReactor("create", "subjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		sar := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		ra := sar.Spec.ResourceAttributes
		ok := ra.Group == "debug.compute.datumapis.com" && ra.Resource == "instances" && ra.Namespace == "default" &&
			((ra.Subresource == "log" && ra.Verb == "get") || (ra.Subresource == "exec" && ra.Verb == "create"))
		sar.Status.Allowed = ok && contains(allowed[sar.Spec.User], ra.Subresource)
		return true, sar, nil
	})
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	authn := authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		name := r.Header.Get("X-Test-User")
		return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, name != "", nil
	})
	server, err := NewServer(Config{
		Project: project, Reviews: cs.AuthorizationV1().SubjectAccessReviews(), Authenticator: authn,
		Hub:             &rest.Config{Host: srv.URL, BearerToken: "relay", TLSClientConfig: rest.TLSClientConfig{CAData: ca}},
		ResponseTimeout: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return server
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func runtimeScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := computev1alpha.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func get(server http.Handler, path, userName string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if userName != "" {
		req.Header.Set("X-Test-User", userName)
	}
	req.Header.Set("X-Remote-User", userName)
	rec := httptest.NewRecorder()
	server.ServeHTTP(rec, req)
	return rec
}

const logURL = prefix + "/namespaces/default/instances/web-dfw-0/log"

func TestALogIsRelayedThroughTheCitysClusterProxy(t *testing.T) {
	h := &hub{}
	server := newTestServer(t, h, false, map[string][]string{"alice": {"log"}})
	rec := get(server, logURL+"?follow=true&tailLines=5&container=app&sinceSeconds=60&previous=false&timestamps=true&evil=1", "alice")
	if rec.Code != http.StatusOK || rec.Body.String() != "line 1\nline 2\n" {
		t.Fatalf("got %d %q", rec.Code, rec.Body.String())
	}
	calls := h.proxied()
	if len(calls) != 1 {
		t.Fatalf("the hub was called %d times through the proxy", len(calls))
	}
	c := calls[0]
	if diff := cmp.Diff("/apis/cluster.karmada.io/v1alpha1/clusters/cell-dfw/proxy/api/v1/namespaces/ns-1234/pods/web-dfw-0/log", c.URL.Path); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff("container=app&follow=true&previous=false&sinceSeconds=60&tailLines=5&timestamps=true", c.URL.Query().Encode()); diff != "" {
		t.Errorf("only the log API's parameters pass: %s", diff)
	}
	if c.Header.Get("X-Remote-User") != "" || c.Header.Get("Authorization") != "Bearer relay" {
		t.Errorf("the hub must see the relay's identity only, got user header %q, authorization %q", c.Header.Get("X-Remote-User"), c.Header.Get("Authorization"))
	}
}

func TestRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		path, user string
		stale      bool
		wantCode   int
		wantMsg    string
	}{
		"no forwarded identity is unauthorized": {logURL, "", false, http.StatusUnauthorized, "only requests its project plane's aggregator forwards"},
		"a tenant without the right is forbidden, in kubectl's words": {logURL, "mallory", false, http.StatusForbidden,
			`User "mallory" cannot get resource "instances/log" in API group "debug.compute.datumapis.com" in the namespace "default"`},
		"a log right is no exec right": {prefix + "/namespaces/default/instances/web-dfw-0/exec?command=sh", "alice", false, http.StatusForbidden,
			`cannot create resource "instances/exec"`},
		"a missing instance is not found":   {prefix + "/namespaces/default/instances/web-lhr-0/log", "alice", false, http.StatusNotFound, `instance "web-lhr-0" not found`},
		"a stale city fails at once, named": {logURL, "alice", true, http.StatusServiceUnavailable, "city DFW is unreachable: its cell has not been heard from"},
		"an unknown path is not found":      {prefix + "/namespaces/default/pods/x/log", "alice", false, http.StatusNotFound, "could not find"},
	} {
		t.Run(name, func(t *testing.T) {
			h := &hub{}
			server := newTestServer(t, h, tc.stale, map[string][]string{"alice": {"log"}})
			rec := get(server, tc.path, tc.user)
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
			if rec.Code != tc.wantCode || int(st.Code) != tc.wantCode || !strings.Contains(st.Message, tc.wantMsg) {
				t.Errorf("got %d %s, want %d with %q", rec.Code, rec.Body.String(), tc.wantCode, tc.wantMsg)
			}
			if len(h.proxied()) != 0 {
				t.Error("a refused request reached the hub")
			}
		})
	}
}

// TestACellThatDoesNotAnswerFailsFastNamingTheCity: the hub answers only
// after a minute, so the 503 naming the city can only come from the
// server's response timeout (500 ms here); without it the request would
// get the hub's late answer instead. No clock is read: the status decides.
func TestACellThatDoesNotAnswerFailsFastNamingTheCity(t *testing.T) {
	h := &hub{delay: time.Minute}
	server := newTestServer(t, h, false, map[string][]string{"alice": {"log"}})
	rec := get(server, logURL+"?follow=true", "alice")
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(string(body), "city DFW is unreachable") {
		t.Errorf("got %d %s, want 503 naming the city (the response timeout did not bound the wait)", rec.Code, body)
	}
}

func TestDiscoveryNamesTheSubresources(t *testing.T) {
	server := newTestServer(t, &hub{}, false, nil)
	rec := get(server, prefix, "")
	for _, want := range []string{`"instances/log"`, `"instances/exec"`, `"groupVersion":"debug.compute.datumapis.com/v1alpha"`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("discovery lacks %s: %s", want, rec.Body.String())
		}
	}
}

func TestRequestHeaderConfiguration(t *testing.T) {
	for name, tc := range map[string]struct {
		data    map[string]string
		wantErr string
	}{
		"no front-proxy CA":    {map[string]string{}, "has no front-proxy CA"},
		"a CA that is not PEM": {map[string]string{"requestheader-client-ca-file": "junk"}, "is not PEM"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := requestHeaderFromData(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got %v, want %q", err, tc.wantErr)
			}
		})
	}
}
