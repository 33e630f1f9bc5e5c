package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	servicesv1alpha1 "github.com/citycells/compute/api/services/v1alpha1"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
)

// The enablement tests share the enablement plane's one entitlement, so
// they run one after another.
func TestEnablement(t *testing.T) {
	h := clitest.New(t, env, enablementPlane)
	ctx := context.Background()
	set := func(phase servicesv1alpha1.EntitlementPhase) {
		t.Helper()
		if err := clitest.SetEntitlement(ctx, h.Client, phase); err != nil {
			t.Fatal(err)
		}
		if phase == "" {
			// Wait until the deletion is visible.
			for range 50 {
				var e servicesv1alpha1.ServiceEntitlement
				if apierrors.IsNotFound(h.Client.Get(ctx, client.ObjectKey{Name: cmdutil.EntitlementName}, &e)) {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	requested := func() bool {
		var e servicesv1alpha1.ServiceEntitlement
		return h.Client.Get(ctx, client.ObjectKey{Name: cmdutil.EntitlementName}, &e) == nil
	}

	t.Run("not requested without a terminal says how to request it", func(t *testing.T) {
		set("")
		res := h.Run(main, clitest.RunOptions{}, "workloads")
		if res.Code != cmdutil.ExitUsage || requested() {
			t.Fatalf("%+v", res)
		}
		mustContain(t, "stderr", res.Stderr, `compute is not enabled for context "enablement"`, "→ Run the command again with --yes to request access,")
	})

	t.Run("not requested and declined at the prompt requests nothing", func(t *testing.T) {
		set("")
		res := h.Run(main, clitest.RunOptions{Terminal: true, Stdin: "n\n"}, "workloads")
		if res.Code != cmdutil.ExitFailure || requested() {
			t.Fatalf("%+v", res)
		}
		mustContain(t, "stderr", res.Stderr, `Compute is not enabled for context "enablement". Request access now? [y/N]: `,
			"nothing was requested")
	})

	t.Run("requested but not activated in time exits with the pending code", func(t *testing.T) {
		set("")
		res := h.Run(main, clitest.RunOptions{}, "workloads", "--yes")
		if res.Code != cmdutil.ExitPending || !requested() {
			t.Fatalf("%+v", res)
		}
		mustContain(t, "stderr", res.Stderr, "Requesting compute", "is still being activated", "Nothing else is needed")
	})

	t.Run("still activating says so without asking again", func(t *testing.T) {
		set(servicesv1alpha1.EntitlementPhasePendingApproval)
		res := h.Run(main, clitest.RunOptions{Terminal: true, Stdin: "y\n"}, "workloads")
		if res.Code != cmdutil.ExitPending || strings.Contains(res.Stderr, "[y/N]") {
			t.Fatalf("%+v", res)
		}
		mustContain(t, "stderr", res.Stderr, `compute was requested for context "enablement" and is still being activated`)
	})

	t.Run("requested at the prompt and activated while waiting proceeds", func(t *testing.T) {
		set("")
		go func() {
			for range 100 {
				if requested() {
					_ = clitest.SetEntitlement(ctx, h.Client, servicesv1alpha1.EntitlementPhaseActive)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		res := h.Run(main, clitest.RunOptions{Terminal: true, Stdin: "y\n", Factory: func(f *cmdutil.Factory) { f.ActivationWait = 10 * time.Second }}, "workloads")
		if res.Code != cmdutil.ExitOK {
			t.Fatalf("%+v", res)
		}
		mustContain(t, "stderr", res.Stderr, `Compute is enabled for context "enablement".`, "No workloads found")
	})

	t.Run("rejected is a failure with the provider's answer", func(t *testing.T) {
		set(servicesv1alpha1.EntitlementPhaseRejected)
		res := h.Run(main, clitest.RunOptions{}, "workloads")
		if res.Code != cmdutil.ExitFailure {
			t.Fatalf("%+v", res)
		}
		mustContain(t, "stderr", res.Stderr, "was rejected: compute is not offered to this organization", "Contact Datum support")
	})

	t.Run("already exists when requesting means activation is pending, never an error", func(t *testing.T) {
		// Someone requested compute between our read and our request.
		set(servicesv1alpha1.EntitlementPhasePendingApproval)
		var stdout, stderr bytes.Buffer
		f := h.Factory(clitest.RunOptions{}, &stdout, &stderr)
		f.Yes = true
		f.ActivationWait = 300 * time.Millisecond
		real, err := client.NewWithWatch(env.Plane(enablementPlane).Config(), client.Options{Scheme: cmdutil.NewScheme()})
		if err != nil {
			t.Fatal(err)
		}
		first := true
		racing := interceptor.NewClient(real, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*servicesv1alpha1.ServiceEntitlement); ok && first {
				first = false
				return apierrors.NewNotFound(schema.GroupResource{Group: "services.miloapis.com", Resource: "serviceentitlements"}, key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		}})
		err = f.EnsureEnabled(ctx, &cmdutil.Clients{Client: racing, Target: cmdutil.Target{Project: "p1"}})
		if cmdutil.ExitCode(err) != cmdutil.ExitPending || strings.Contains(err.Error(), "already exists") {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("active proceeds without a word", func(t *testing.T) {
		set(servicesv1alpha1.EntitlementPhaseActive)
		res := h.Run(main, clitest.RunOptions{}, "workloads")
		if res.Code != cmdutil.ExitOK || strings.Contains(res.Stderr, "enabled") || strings.Contains(res.Stderr, "activat") {
			t.Fatalf("%+v", res)
		}
	})
}
