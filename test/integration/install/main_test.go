// Package install_test proves compute's kustomize overlays on real API
// servers: each overlay renders with the pinned kustomize and applies (for
// real, then with a server-side dry run) to the plane it is meant for —
// project plane, Karmada hub, cell, quota plane — and each identity the
// overlays create, authenticated with a TokenRequest token as it would be in
// a cluster, is allowed what its role needs and denied the rest.
package install_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/toolchain"
	"github.com/citycells/compute/test/integration/fixtures"
)

// The planes: a project plane (also the project's quota plane), the hub
// (the Karmada apiserver's role: compute's CRDs and Karmada's) and one cell.
var env *fixtures.Env

const (
	project = "project"
	hub     = "hub"
	cell    = "cell"
)

func TestMain(m *testing.M) {
	os.Exit(fixtures.Run(m, fixtures.Input{
		Planes: []planes.PlaneSpec{
			// The project plane runs the clusterrole aggregation controller,
			// as every cluster's kube-controller-manager does, so the tenant
			// roles reach view and edit the way they do in a real plane.
			{Name: project, CRDDirs: []string{fixtures.CRDDir(), fixtures.ExternalCRDDir()}, Controllers: []string{"clusterrole-aggregation-controller"}},
			{Name: hub, CRDDirs: []string{fixtures.CRDDir()}},
			{Name: cell, CRDDirs: []string{fixtures.CRDDir()}},
		},
		KarmadaHubs: []string{hub},
		// The roles test reads what the managers it starts log.
		OwnLogger: true,
		Setup: func(_ context.Context, e *fixtures.Env) error {
			env = e
			return nil
		},
	}))
}

// render builds config/overlays/<overlay> with the pinned kustomize.
func render(t *testing.T, overlay string) []*unstructured.Unstructured {
	t.Helper()
	bin, err := toolchain.Path(toolchain.Kustomize)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "build", fixtures.RepoDir("config", "overlays", overlay))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize build config/overlays/%s: %v\n%s", overlay, err, stderr.String())
	}
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// serviceAccountConfig returns a client configuration of plane that
// authenticates as namespace/name with a token from the TokenRequest API,
// as a Pod's projected token or a kubeconfig Secret would. The
// ServiceAccount is created when missing.
func serviceAccountConfig(t *testing.T, plane, namespace, name string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Plane(plane).Config())
	if err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("failed to create ServiceAccount %s/%s in %s: %v", namespace, name, plane, err)
	}
	expiry := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s in %s: %v", namespace, name, plane, err)
	}
	return &rest.Config{
		Host:            env.Plane(plane).URL(),
		BearerToken:     tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: env.Plane(plane).CAPEM()},
	}
}
