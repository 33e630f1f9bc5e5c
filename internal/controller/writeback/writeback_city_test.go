package writeback

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// TestReconcileOfAnotherCity: a cell whose hub cache holds one city's
// objects (City set) never writes back an Instance of another city — it
// says which flag to fix — and waits for an Instance without a city.
func TestReconcileOfAnotherCity(t *testing.T) {
	tests := map[string]struct {
		city        string
		wantErrText string
	}{
		"an Instance of another city fails naming the flag": {city: "LHR", wantErrText: "--cell-city-code"},
		"an Instance without a city waits for its label":    {city: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			if err := computev1alpha.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			inst := cellInstance()
			if tc.city == "" {
				delete(inst.Labels, computev1alpha.CityCodeLabel)
			} else {
				inst.Labels[computev1alpha.CityCodeLabel] = tc.city
			}
			cell := fake.NewClientBuilder().WithScheme(s).WithObjects(inst).Build()
			wd := hubWD()
			wd.Name = inst.Labels[computev1alpha.WorkloadDeploymentNameLabel]
			hub := fake.NewClientBuilder().WithScheme(s).WithObjects(wd).Build()
			r := &Reconciler{Cell: cell, CellReader: cell, Hub: hub, HubReader: hub, City: "DFW"}

			_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(inst)})
			switch {
			case tc.wantErrText == "" && err != nil:
				t.Fatalf("Reconcile() = %v, want nil", err)
			case tc.wantErrText != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErrText) || !errors.Is(err, reconcile.TerminalError(nil))):
				t.Fatalf("Reconcile() = %v, want a terminal error naming %s", err, tc.wantErrText)
			}
			var copies computev1alpha.InstanceList
			if err := hub.List(context.Background(), &copies); err != nil {
				t.Fatal(err)
			}
			if len(copies.Items) != 0 {
				t.Errorf("the Instance was written back: %v", copies.Items)
			}
		})
	}
}
