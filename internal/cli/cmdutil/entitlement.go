package cmdutil

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	servicesv1alpha1 "github.com/citycells/compute/api/services/v1alpha1"
)

// The project's compute entitlement.
const (
	// EntitlementName is the name of the ServiceEntitlement that enables
	// compute for a project.
	EntitlementName = "compute"
	// ComputeServiceName is the catalog service it requests.
	ComputeServiceName = "compute.datumapis.com"
)

// EntitlementState is whether compute is enabled for a project.
type EntitlementState string

// Entitlement states.
const (
	// EntitlementUnsupported: the server has no entitlement API (a plain
	// cluster): compute is assumed enabled.
	EntitlementUnsupported EntitlementState = "Unsupported"
	// EntitlementNotRequested: no entitlement exists.
	EntitlementNotRequested EntitlementState = "NotRequested"
	// EntitlementActivating: the entitlement exists but is not active yet.
	EntitlementActivating EntitlementState = "Activating"
	// EntitlementActive: compute may be used.
	EntitlementActive EntitlementState = "Active"
	// EntitlementRejected: the provider refused the request.
	EntitlementRejected EntitlementState = "Rejected"
)

// StateOf classifies an entitlement: Active by phase, Rejected by phase,
// anything else (no phase yet, PendingApproval) is still activating.
func StateOf(e *servicesv1alpha1.ServiceEntitlement) EntitlementState {
	switch e.Status.Phase {
	case servicesv1alpha1.EntitlementPhaseActive:
		return EntitlementActive
	case servicesv1alpha1.EntitlementPhaseRejected:
		return EntitlementRejected
	}
	return EntitlementActivating
}

// readEntitlement returns the state of the project's compute entitlement
// and the entitlement when one exists.
func readEntitlement(ctx context.Context, c client.Client) (EntitlementState, *servicesv1alpha1.ServiceEntitlement, error) {
	var e servicesv1alpha1.ServiceEntitlement
	err := c.Get(ctx, client.ObjectKey{Name: EntitlementName}, &e)
	switch {
	case err == nil:
		return StateOf(&e), &e, nil
	case meta.IsNoMatchError(err) || apierrors.IsForbidden(err):
		// No entitlement API here, or we may not read it: let the
		// command itself find out whether it may use compute.
		return EntitlementUnsupported, nil, nil
	case apierrors.IsNotFound(err):
		return EntitlementNotRequested, nil, nil
	}
	return "", nil, fmt.Errorf("cannot check whether compute is enabled: %w", err)
}

// EnsureEnabled makes sure compute is enabled for the project before a
// command uses it (ProjectRef.Resolve calls it after connecting; getting
// clients never does):
//
//   - not requested: offer to request it (or request it with --yes), then
//     wait briefly for activation;
//   - requested but still activating: say so and stop with ExitPending,
//     without asking again;
//   - active (or no entitlement API on the server): proceed;
//   - rejected: stop with the provider's answer.
//
// A request answered "already exists" means someone requested it first:
// activation is pending, never an error.
func (f *Factory) EnsureEnabled(ctx context.Context, c *Clients) error {
	state, e, err := readEntitlement(ctx, c.Client)
	if err != nil {
		return err
	}
	switch state {
	case EntitlementActive, EntitlementUnsupported:
		return nil
	case EntitlementRejected:
		return rejected(c.Target, e)
	case EntitlementActivating:
		return activating(c.Target)
	}

	// Not requested.
	if !f.Yes && !f.CanPrompt() {
		return &ExitError{Code: ExitUsage,
			Err: fmt.Errorf("compute is not enabled for %s", c.Target),
			Hints: []string{"Run the command again with --yes to request access,",
				"or run it in a terminal to be asked."}}
	}
	ok, err := f.Confirm(ctx, fmt.Sprintf("Compute is not enabled for %s. Request access now?", c.Target))
	if err != nil {
		return err
	}
	if !ok {
		return Failf("compute is not enabled for %s; nothing was requested", c.Target)
	}
	_, _ = fmt.Fprintf(f.Streams.ErrOut, "Requesting compute for %s...\n", c.Target)
	req := &servicesv1alpha1.ServiceEntitlement{
		ObjectMeta: metav1.ObjectMeta{Name: EntitlementName},
		Spec:       servicesv1alpha1.ServiceEntitlementSpec{ServiceRef: servicesv1alpha1.ServiceRef{Name: ComputeServiceName}},
	}
	switch err := c.Client.Create(ctx, req); {
	case err == nil, apierrors.IsAlreadyExists(err):
		// Already exists: requested by someone else, or by an earlier
		// run whose activation is still pending. Either way, wait.
	case apierrors.IsForbidden(err):
		return WithHints(fmt.Errorf("you may not request compute for %s", c.Target),
			"Ask an owner of the project to enable compute.")
	default:
		return fmt.Errorf("cannot request compute for %s: %w", c.Target, err)
	}
	return f.awaitActivation(ctx, c)
}

// awaitActivation waits up to ActivationWait for the entitlement to
// become active.
func (f *Factory) awaitActivation(ctx context.Context, c *Clients) error {
	wait := f.ActivationWait
	if wait <= 0 {
		wait = DefaultActivationWait
	}
	deadline := f.Clock.NewTimer(wait)
	defer deadline.Stop()
	tick := f.Clock.NewTicker(f.Poll())
	defer tick.Stop()
	_, _ = fmt.Fprintln(f.Streams.ErrOut, "Waiting for compute to be activated...")
	for {
		state, e, err := readEntitlement(ctx, c.Client)
		if err != nil {
			return err
		}
		switch state {
		case EntitlementActive, EntitlementUnsupported:
			_, _ = fmt.Fprintf(f.Streams.ErrOut, "Compute is enabled for %s.\n", c.Target)
			return nil
		case EntitlementRejected:
			return rejected(c.Target, e)
		}
		select {
		case <-ctx.Done():
			if Interrupted(ctx) {
				return activating(c.Target)
			}
			return context.Cause(ctx)
		case <-deadline.C():
			return activating(c.Target)
		case <-tick.C():
		}
	}
}

// activating is the answer while the entitlement is not active yet.
func activating(t Target) error {
	return &ExitError{Code: ExitPending,
		Err:   fmt.Errorf("compute was requested for %s and is still being activated", t),
		Hints: []string{"Nothing else is needed: activation usually takes a minute or two. Try again shortly."}}
}

// rejected is the answer when the provider refused the entitlement.
func rejected(t Target, e *servicesv1alpha1.ServiceEntitlement) error {
	msg := ""
	if e != nil {
		if c := meta.FindStatusCondition(e.Status.Conditions, servicesv1alpha1.ServiceEntitlementConditionReady); c != nil && c.Message != "" {
			msg = ": " + c.Message
		}
	}
	return &ExitError{Code: ExitFailure,
		Err:   fmt.Errorf("the request to use compute in %s was rejected%s", t, msg),
		Hints: []string{"Contact Datum support to enable compute for this project."}}
}
