package debugapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// clusterResource is Karmada's Cluster kind in the federation plane.
var clusterResource = schema.GroupVersionResource{Group: "cluster.karmada.io", Version: "v1alpha1", Resource: "clusters"}

// Query parameters passed on to the cell, by subresource; anything else
// is dropped.
var (
	logParams  = []string{"follow", "tailLines", "sinceSeconds", "sinceTime", "previous", "timestamps", "container", "limitBytes"}
	execParams = []string{"command", "container", "stdin", "stdout", "stderr", "tty"}
)

// relay reaches a city's Pods through Karmada's cluster proxy with the
// relay's hub identity.
type relay struct {
	host      *url.URL
	transport http.RoundTripper
	upgrade   proxy.UpgradeRequestRoundTripper
	clusters  dynamic.NamespaceableResourceInterface
	timeout   time.Duration

	mu      sync.Mutex
	byCity  map[string]string
	fetched map[string]time.Time
}

// newRelay builds the transports of hub: a plain one whose wait for
// response headers is bounded by timeout, and one for upgrades (exec).
func newRelay(hub *rest.Config, timeout time.Duration) (*relay, error) {
	host, _, err := rest.DefaultServerUrlFor(hub)
	if err != nil {
		return nil, fmt.Errorf("debugapi: bad federation plane address: %w", err)
	}
	tlsConfig, err := rest.TLSConfigFor(hub)
	if err != nil {
		return nil, fmt.Errorf("debugapi: federation plane TLS: %w", err)
	}
	tc, err := hub.TransportConfig()
	if err != nil {
		return nil, fmt.Errorf("debugapi: federation plane credentials: %w", err)
	}
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	base := utilnet.SetTransportDefaults(&http.Transport{
		TLSClientConfig: tlsConfig, DialContext: dialer.DialContext, ResponseHeaderTimeout: timeout,
	})
	plain, err := transport.HTTPWrappersForConfig(tc, base)
	if err != nil {
		return nil, fmt.Errorf("debugapi: federation plane credentials: %w", err)
	}
	wrapper, err := transport.HTTPWrappersForConfig(tc, proxy.MirrorRequest)
	if err != nil {
		return nil, fmt.Errorf("debugapi: federation plane credentials: %w", err)
	}
	upgradeBase := utilnet.SetOldTransportDefaults(&http.Transport{TLSClientConfig: tlsConfig.Clone(), DialContext: dialer.DialContext})
	dyn, err := dynamic.NewForConfig(hub)
	if err != nil {
		return nil, fmt.Errorf("debugapi: federation plane client: %w", err)
	}
	return &relay{
		host: host, transport: plain, upgrade: proxy.NewUpgradeRequestRoundTripper(upgradeBase, wrapper),
		clusters: dyn.Resource(clusterResource), timeout: timeout,
		byCity: map[string]string{}, fetched: map[string]time.Time{},
	}, nil
}

// clusterRefresh is how long a city's Karmada Cluster name is remembered.
const clusterRefresh = time.Minute

// cluster returns the Karmada Cluster serving city (labelled with
// CityCodeTopologyLabel).
func (r *relay) cluster(ctx context.Context, city string) (string, error) {
	r.mu.Lock()
	name, at := r.byCity[city], r.fetched[city]
	r.mu.Unlock()
	if name != "" && time.Since(at) < clusterRefresh {
		return name, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	list, err := r.clusters.List(ctx, metav1.ListOptions{LabelSelector: computev1alpha.CityCodeTopologyLabel + "=" + city})
	if err != nil {
		return "", fmt.Errorf("failed to find the cluster of city %s in the federation plane: %w", city, err)
	}
	names := make([]string, 0, len(list.Items))
	for _, c := range list.Items {
		names = append(names, c.GetName())
	}
	if len(names) == 0 {
		return "", unreachable(city, "no cluster of the federation plane serves it")
	}
	slices.Sort(names)
	r.mu.Lock()
	r.byCity[city], r.fetched[city] = names[0], time.Now()
	r.mu.Unlock()
	return names[0], nil
}

// serve relays r to the Pod of dest through Karmada's cluster proxy.
func (r *relay) serve(w http.ResponseWriter, req *http.Request, dest destination) {
	sub := LogSubresource
	params := logParams
	upgrade := httpstream.IsUpgradeRequest(req)
	if strings.HasSuffix(req.URL.Path, "/"+ExecSubresource) {
		sub, params = ExecSubresource, execParams
	}
	cluster, err := r.cluster(req.Context(), dest.city)
	if err != nil {
		writeError(w, err)
		return
	}
	loc := *r.host
	loc.Path = path.Join(loc.Path, "/apis/cluster.karmada.io/v1alpha1/clusters", cluster,
		"proxy/api/v1/namespaces", dest.namespace, "pods", dest.pod, sub)
	loc.RawQuery = filterQuery(req.URL.Query(), params).Encode()
	out := req.Clone(req.Context())
	out.URL.RawQuery = loc.RawQuery
	for k := range out.Header {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "x-remote-") || strings.HasPrefix(lk, "impersonate-") || lk == "authorization" {
			out.Header.Del(k)
		}
	}
	h := proxy.NewUpgradeAwareHandler(&loc, r.transport, false, sub == ExecSubresource && upgrade, cityResponder{city: dest.city})
	h.UpgradeTransport = r.upgrade
	h.FlushInterval = 100 * time.Millisecond
	h.UseRequestLocation = false
	h.ServeHTTP(w, out)
}

// filterQuery keeps the parameters of allowed.
func filterQuery(q url.Values, allowed []string) url.Values {
	out := url.Values{}
	for _, k := range allowed {
		if v, ok := q[k]; ok {
			out[k] = v
		}
	}
	return out
}

// cityResponder answers a failure to reach the cell with an error naming
// its city.
type cityResponder struct{ city string }

// Error answers err.
func (c cityResponder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	writeError(w, unreachable(c.city, err.Error()))
}
