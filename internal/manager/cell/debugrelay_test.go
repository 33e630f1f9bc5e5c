package cell

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// newRelayManager returns a manager that is never started, whose scheme
// is s and whose mapper knows namespaces and RoleBindings.
func newRelayManager(t *testing.T, s *apiruntime.Scheme) ctrl.Manager {
	t.Helper()
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme: s,
		MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
			m := meta.NewDefaultRESTMapper(nil)
			m.Add(corev1.SchemeGroupVersion.WithKind("Namespace"), meta.RESTScopeRoot)
			m.Add(rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), meta.RESTScopeNamespace)
			return m, nil
		},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

func TestSetupDebugRelay(t *testing.T) {
	t.Run("it registers with the default user", func(t *testing.T) {
		s := apiruntime.NewScheme()
		utilruntime.Must(clientgoscheme.AddToScheme(s))
		if err := SetupDebugRelay(newRelayManager(t, s), DebugRelayOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a scheme without rbac/v1 fails with the fix", func(t *testing.T) {
		err := SetupDebugRelay(newRelayManager(t, apiruntime.NewScheme()), DebugRelayOptions{User: "relay"})
		if err == nil || !strings.Contains(err.Error(), "add clientgoscheme.AddToScheme") {
			t.Fatalf("error %v, want one naming the fix", err)
		}
	})
}
