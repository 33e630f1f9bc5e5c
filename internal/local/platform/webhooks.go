//go:build linux

package platform

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/citycells/compute/internal/webhook"
)

// Names of compute's webhook configurations in a project plane: the
// generated manifests' names (config/webhook) with the namePrefix a
// kustomize overlay would give them.
const (
	mutatingWebhookName   = "compute-mutating-webhook-configuration"
	validatingWebhookName = "compute-validating-webhook-configuration"
)

// servesWebhooks reports whether the manager binary serves compute's
// admission webhooks (it has --webhook-cert-dir); when it does not, the
// platform registers none.
func servesWebhooks(flags managerFlags) bool {
	return flags[flagWebhookCertDir]
}

// localWebhooks returns compute's webhook configurations
// (webhook.Configurations) pointing at a server on baseURL
// (https://127.0.0.1:<port>) trusted through caPEM, instead of an in-cluster
// Service, and leaving the requests of the users in skip out of the
// projection guard, as the management-controllers component does for the
// manager's ServiceAccount (webhook.ClientConfig.SkipProjectionWriters).
func localWebhooks(baseURL string, caPEM []byte, skip []string) ([]*unstructured.Unstructured, error) {
	mutating, validating := webhook.Configurations(webhook.ClientConfig{URL: baseURL, CABundle: caPEM, SkipProjectionWriters: skip})
	mutating.Name, validating.Name = mutatingWebhookName, validatingWebhookName
	out := make([]*unstructured.Unstructured, 0, 2)
	for _, obj := range []runtime.Object{mutating, validating} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("failed to convert compute's webhook configurations: %w", err)
		}
		out = append(out, &unstructured.Unstructured{Object: u})
	}
	return out, nil
}

// registerWebhooks installs compute's webhook configurations in a
// management role's project plane, pointing at its webhook server (or, for
// a replicated role, at the webhook front before its replicas' servers).
func (p *Platform) registerWebhooks(ctx context.Context, r managerRole) error {
	c, err := newClient(p.env.Plane(r.plane))
	if err != nil {
		return err
	}
	var skip []string
	if p.cfg.Identities == IdentitiesOverlay {
		// The manager runs as the overlay's ServiceAccount.
		skip = []string{serviceAccountUser(identityNamespace, managerServiceAccount)}
	}
	hooks, err := localWebhooks(p.webhookURL(r), p.env.CAPEM(), skip)
	if err != nil {
		return err
	}
	for _, h := range hooks {
		if err := apply(ctx, c, h); err != nil {
			return fmt.Errorf("failed to register the admission webhooks of %s: %w", r.name, err)
		}
	}
	p.progress.linef("%s: admission webhooks registered in %s", r.name, r.plane)
	return nil
}
