package debugapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The API the server serves.
const (
	// Group is the debug API's group.
	Group = "debug.compute.datumapis.com"
	// Version is the debug API's version.
	Version = "v1alpha"
	// APIServiceName is the name of its APIService in a project plane.
	APIServiceName = Version + "." + Group
	// LogSubresource and ExecSubresource are the subresources of Instances
	// the tenants' RBAC names, in the debug API's own group: the project
	// plane's apiserver authorizes the path with it before it proxies.
	LogSubresource = "log"
	// ExecSubresource is the exec subresource.
	ExecSubresource = "exec"
	// DefaultResponseTimeout bounds the wait for the cell's first response.
	DefaultResponseTimeout = 10 * time.Second
)

// prefix is the path every debug request starts with.
const prefix = "/apis/" + Group + "/" + Version

// Config is what a Server needs.
type Config struct {
	// Project reads Instances and Workloads in the project plane.
	Project client.Reader
	// Reviews asks the project plane whether the tenant may.
	Reviews authorizationclient.SubjectAccessReviewInterface
	// Hub is the relay's identity in the federation plane: it may list
	// Karmada Clusters and use their proxy subresource, nothing else.
	Hub *rest.Config
	// Authenticator authenticates the aggregator's requests (requestheader).
	Authenticator authenticator.Request
	// ResponseTimeout bounds the wait for the cell's first response;
	// DefaultResponseTimeout when zero.
	ResponseTimeout time.Duration
}

// Server serves the debug API.
type Server struct {
	cfg   Config
	relay *relay
}

// NewServer checks cfg and returns a Server.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Project == nil || cfg.Reviews == nil || cfg.Hub == nil || cfg.Authenticator == nil {
		return nil, errors.New("debugapi: Project, Reviews, Hub and Authenticator are required")
	}
	if cfg.ResponseTimeout <= 0 {
		cfg.ResponseTimeout = DefaultResponseTimeout
	}
	r, err := newRelay(cfg.Hub, cfg.ResponseTimeout)
	if err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, relay: r}, nil
}

// target is the Instance a request is about.
type target struct {
	namespace, name, subresource string
}

// parseTarget reads NS, NAME and the subresource from a path under prefix.
func parseTarget(rest string) (target, bool) {
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if len(parts) != 5 || parts[0] != "namespaces" || parts[2] != "instances" {
		return target{}, false
	}
	t := target{namespace: parts[1], name: parts[3], subresource: parts[4]}
	if len(validation.IsDNS1123Label(t.namespace)) > 0 || len(validation.IsDNS1123Subdomain(t.name)) > 0 ||
		(t.subresource != LogSubresource && t.subresource != ExecSubresource) {
		return target{}, false
	}
	return t, true
}

// ServeHTTP routes discovery, health and the Instance subresources.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz", "/readyz", "/livez":
		_, _ = w.Write([]byte("ok"))
		return
	case "/apis":
		writeJSON(w, http.StatusOK, groupList())
		return
	case "/apis/" + Group, "/apis/" + Group + "/":
		writeJSON(w, http.StatusOK, apiGroup())
		return
	case prefix, prefix + "/":
		writeJSON(w, http.StatusOK, resourceList())
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, prefix+"/")
	t, parsed := parseTarget(rest)
	if !ok || !parsed {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("the server could not find %s", r.URL.Path))
		return
	}
	s.serveInstance(w, r, t)
}

// serveInstance authenticates, authorizes, resolves and relays.
func (s *Server) serveInstance(w http.ResponseWriter, r *http.Request, t target) {
	verb := "get"
	if t.subresource == ExecSubresource {
		verb = "create"
		if r.Method != http.MethodPost && r.Method != http.MethodGet {
			writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "exec takes POST (or GET) with an upgrade")
			return
		}
	} else if r.Method != http.MethodGet {
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "log takes GET")
		return
	}
	resp, ok, err := s.cfg.Authenticator.AuthenticateRequest(r)
	if err != nil || !ok {
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized,
			"the debug API serves only requests its project plane's aggregator forwards")
		return
	}
	if code, reason, msg := s.authorize(r.Context(), resp.User, verb, t); code != 0 {
		writeStatus(w, code, reason, msg)
		return
	}
	dest, err := s.resolve(r.Context(), t)
	if err != nil {
		writeError(w, err)
		return
	}
	s.relay.serve(w, r, dest)
}

// authorize asks the project plane whether u may verb the subresource of
// the Instance; it returns 0 when allowed, else the status to answer.
func (s *Server) authorize(ctx context.Context, u user.Info, verb string, t target) (int, metav1.StatusReason, string) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.GetExtra() {
		extra[k] = v
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: t.namespace, Verb: verb, Group: Group,
			Resource: "instances", Subresource: t.subresource, Name: t.name,
		},
	}}
	got, err := s.cfg.Reviews.Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return http.StatusInternalServerError, metav1.StatusReasonInternalError,
			fmt.Sprintf("failed to authorize the request: %v", err)
	}
	if !got.Status.Allowed {
		return http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf(
			"instances.%s %q is forbidden: User %q cannot %s resource \"instances/%s\" in API group %q in the namespace %q",
			Group, t.name, u.GetName(), verb, t.subresource, Group, t.namespace)
	}
	return 0, "", ""
}

// statusError is an error with the HTTP status it answers with.
type statusError struct {
	code   int
	reason metav1.StatusReason
	msg    string
}

func (e *statusError) Error() string { return e.msg }

// writeError answers err as a Status.
func writeError(w http.ResponseWriter, err error) {
	var se *statusError
	if errors.As(err, &se) {
		writeStatus(w, se.code, se.reason, se.msg)
		return
	}
	writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
}

// writeStatus answers a metav1.Status, which kubectl and client-go print.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	writeJSON(w, code, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg,
	})
}

// writeJSON answers v as JSON with code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// groupList, apiGroup and resourceList are the discovery documents.
func groupList() *metav1.APIGroupList {
	return &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{*apiGroup()}}
}

func apiGroup() *metav1.APIGroup {
	gv := metav1.GroupVersionForDiscovery{GroupVersion: Group + "/" + Version, Version: Version}
	return &metav1.APIGroup{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:     Group, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv,
	}
}

func resourceList() *metav1.APIResourceList {
	return &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: Group + "/" + Version,
		APIResources: []metav1.APIResource{
			{Name: "instances/" + LogSubresource, Namespaced: true, Kind: "Instance", Verbs: metav1.Verbs{"get"}},
			{Name: "instances/" + ExecSubresource, Namespaced: true, Kind: "Instance", Verbs: metav1.Verbs{"create", "get"}},
		},
	}
}
