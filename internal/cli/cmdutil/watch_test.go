package cmdutil

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// A wait lists what it watches consistently: the reflector's first list
// would accept any version (resourceVersion=0), which an API server may
// answer from a watch cache that lags behind the command's own write —
// `deploy` created a Workload, waited on it, and was told it did not
// exist. (A pure unit test: a fake client records the list options; the
// CLI tests run the same waits against real API servers.)
func TestAWaitSeesItsOwnWritesListingTheLatestState(t *testing.T) {
	w := &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	var mu sync.Mutex
	var versions []string
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(w).Build(), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			lo := (&client.ListOptions{}).ApplyOptions(opts)
			mu.Lock()
			versions = append(versions, lo.Raw.ResourceVersion)
			mu.Unlock()
			return c.List(ctx, list, opts...)
		},
	})
	f := &Factory{Clock: clock.RealClock{}, PollInterval: 10 * time.Millisecond}
	err := f.WatchUntil(t.Context(), c, Wait{
		Timeout: 10 * time.Second,
		Sources: []WatchSource{{List: &computev1alpha.WorkloadList{}, Object: &computev1alpha.Workload{}, Namespace: "default"}},
		Step:    func(seen Seen) (bool, error) { return len(seen[0]) == 1, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(versions) == 0 {
		t.Fatal("the wait never listed")
	}
	for _, rv := range versions {
		if rv == "0" {
			t.Errorf("a list accepted any version (resourceVersion=0): %q", versions)
		}
	}
}
