package install_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/citycells/compute/internal/serving"
)

// hardened is the overlay with the network-policy and metrics-certificate
// components (and prometheus' ServiceMonitor).
const hardened = "management-plane-hardened"

// objectOf returns the rendered object of kind and name.
func objectOf(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	t.Fatalf("the rendering holds no %s %s", kind, name)
	return nil
}

// TestTheMonitorVerifiesTheMetricsCertificate checks that the
// metrics-certificate component's pieces fit — the Certificate names the
// metrics Service, its Secret is what the manager mounts at
// --metrics-cert-dir, the ServiceMonitor trusts that Secret's ca.crt for
// the Service's name and skips no verification — and then serves metrics
// with compute's serving options from such a directory (a self-signed
// certificate, as the component's Issuer writes it) and scrapes it as the
// ServiceMonitor says: the certificate verifies for its serverName, and
// not for another name.
func TestTheMonitorVerifiesTheMetricsCertificate(t *testing.T) {
	installed(t)
	objs := render(t, hardened)
	cert := objectOf(t, objs, "Certificate", "compute-metrics-cert")
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	objectOf(t, objs, "Issuer", issuer)

	svc := objectOf(t, objs, "Service", "compute-manager-metrics")
	if want := svc.GetName() + "." + svc.GetNamespace() + ".svc"; !slices.Contains(dnsNames, want) {
		t.Errorf("the metrics Certificate names %v, not the metrics Service %s", dnsNames, want)
	}

	d := deploymentOf(t, objs, "compute-manager")
	c := d.Spec.Template.Spec.Containers[0]
	var certDir string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--metrics-cert-dir="); ok {
			certDir = v
		}
	}
	mounted := mountedSecret(d, certDir)
	if certDir == "" || mounted != secretName {
		t.Errorf("the manager reads its metrics certificate from %q, holding Secret %q; want the Certificate's Secret %q there", certDir, mounted, secretName)
	}

	sm := objectOf(t, objs, "ServiceMonitor", "compute-manager-metrics")
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("the ServiceMonitor has %d endpoints, want 1", len(endpoints))
	}
	ep := endpoints[0].(map[string]any)
	tlsConfig, _, _ := unstructured.NestedMap(ep, "tlsConfig")
	if skip, _, _ := unstructured.NestedBool(tlsConfig, "insecureSkipVerify"); skip {
		t.Error("the ServiceMonitor still skips TLS verification")
	}
	caSecret, _, _ := unstructured.NestedString(tlsConfig, "ca", "secret", "name")
	caKey, _, _ := unstructured.NestedString(tlsConfig, "ca", "secret", "key")
	serverName, _, _ := unstructured.NestedString(tlsConfig, "serverName")
	if caSecret != secretName || caKey != "ca.crt" {
		t.Errorf("the ServiceMonitor trusts %s[%s], want the metrics Certificate's %s[ca.crt]", caSecret, caKey, secretName)
	}
	if !slices.Contains(dnsNames, serverName) {
		t.Errorf("the ServiceMonitor verifies the name %q, which the Certificate (%v) does not hold", serverName, dnsNames)
	}

	// The directory cert-manager's Secret becomes when mounted, signed
	// as the component's self-signed Issuer signs it.
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t, dnsNames)
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": certPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts := serving.NewOptions()
	opts.MetricsCertDir = dir
	port := freePort(t)
	mgr, err := ctrl.NewManager(serviceAccountConfig(t, project, "compute-system", "compute-manager"), ctrl.Options{
		Metrics:                opts.Metrics("127.0.0.1:" + strconv.Itoa(port)),
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	// Prometheus' identity, bound to compute-metrics-reader as docs/install.md says.
	prometheus := serviceAccountConfig(t, project, "default", "prometheus")
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "prometheus-compute-metrics"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "compute-metrics-reader"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus", "namespace": "default"}},
	}}
	if err := env.Client(project).Create(context.Background(), binding); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(dir, caKey))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	scrape := func(name string) (int, error) {
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: name, MinVersion: tls.VersionTLS12},
		}}
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+prometheus.BearerToken)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer func() { _ = resp.Body.Close() }()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	eventually(t, time.Minute, "the metrics server listens", func() error {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err
	})
	if code, err := scrape(serverName); err != nil || code != http.StatusOK {
		t.Errorf("a scrape verifying %s against ca.crt: %d %v, want 200", serverName, code, err)
	}
	if _, err := scrape("someone-else.compute-system.svc"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a scrape verifying another name: %v, want a certificate verification error", err)
	}
}

// mountedSecret returns the Secret of the volume d's first container
// mounts at path.
func mountedSecret(d *appsv1.Deployment, path string) string {
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		if m.MountPath != path {
			continue
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				return v.Secret.SecretName
			}
		}
	}
	return ""
}

// selfSigned returns a self-signed serving certificate for names and its
// key, PEM-encoded.
func selfSigned(t *testing.T, names []string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// TestTheNetworkFenceCoversWhatComputeServes applies the network-policy
// component's NetworkPolicies to the project plane for real, reads them
// back, and checks against the Deployments compute ships (compute-manager
// of the hardened overlay, compute-quota of the quota-plane overlay) that
// every port they serve but the kubelet's probes is allowed from its one
// source only: metrics from Prometheus' Pods in the monitoring namespace,
// webhooks from an ipBlock (the API server). The plane runs no CNI, so
// what is proven is what the API server stores and selects, not packet
// filtering.
func TestTheNetworkFenceCoversWhatComputeServes(t *testing.T) {
	installed(t)
	ctx := context.Background()
	objs := render(t, hardened)
	var policies []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "NetworkPolicy" {
			policies = append(policies, u)
		}
	}
	if len(policies) == 0 {
		t.Fatalf("%s renders no NetworkPolicy", hardened)
	}
	apply(t, project, policies, false)
	var stored networkingv1.NetworkPolicyList
	if err := env.Client(project).List(ctx, &stored, client.InNamespace("compute-system")); err != nil {
		t.Fatal(err)
	}
	if len(stored.Items) != len(policies) {
		t.Fatalf("the plane holds %d NetworkPolicies in compute-system, want the %d applied", len(stored.Items), len(policies))
	}

	deployments := []*appsv1.Deployment{deploymentOf(t, objs, "compute-manager"), deploymentOf(t, render(t, "quota-plane"), "compute-quota")}
	for _, d := range deployments {
		podLabels := labels.Set(d.Spec.Template.Labels)
		// Every container port but the probes', and where it may come from.
		served := map[int32]string{}
		for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
			if p.Name != "probes" {
				served[p.ContainerPort] = p.Name
			}
		}
		allowed := map[int32][]networkingv1.NetworkPolicyPeer{}
		selected := false
		for _, np := range stored.Items {
			sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
			if err != nil {
				t.Fatal(err)
			}
			if !sel.Matches(podLabels) {
				continue
			}
			selected = true
			if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
				t.Errorf("%s selects %s without fencing ingress", np.Name, d.Name)
			}
			for _, rule := range np.Spec.Ingress {
				if len(rule.From) == 0 || len(rule.Ports) == 0 {
					t.Errorf("%s lets anyone reach %s (a rule with no from or no ports)", np.Name, d.Name)
				}
				for _, p := range rule.Ports {
					if p.Port == nil {
						t.Errorf("%s opens every port of %s", np.Name, d.Name)
						continue
					}
					allowed[p.Port.IntVal] = append(allowed[p.Port.IntVal], rule.From...)
				}
			}
		}
		if !selected {
			t.Errorf("no NetworkPolicy selects %s's Pods (%v)", d.Name, podLabels)
			continue
		}
		for port, name := range served {
			from := allowed[port]
			switch name {
			case "metrics":
				if len(from) != 1 || from[0].NamespaceSelector == nil || from[0].PodSelector == nil ||
					from[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" ||
					from[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "prometheus" {
					t.Errorf("%s's metrics port %d is reachable from %v, want Prometheus' Pods in monitoring only", d.Name, port, from)
				}
			case "webhook":
				if len(from) != 1 || from[0].IPBlock == nil || from[0].NamespaceSelector != nil || from[0].PodSelector != nil {
					t.Errorf("%s's webhook port %d is reachable from %v, want the API server's ipBlock only", d.Name, port, from)
				}
			default:
				t.Errorf("%s serves port %d (%s), which the fence does not know", d.Name, port, name)
			}
		}
		for port := range allowed {
			if _, ok := served[port]; !ok {
				t.Errorf("the fence opens port %d of %s, which it does not serve", port, d.Name)
			}
		}
	}
}
