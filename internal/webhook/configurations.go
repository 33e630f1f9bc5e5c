package webhook

import (
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// ProjectionGuardName names the validating webhook that keeps projections
// read-only.
const ProjectionGuardName = "projection.instances.compute.datumapis.com"

// InstanceTypeWebhookName names the validating webhook of InstanceTypes.
const InstanceTypeWebhookName = "validate.instancetypes.compute.datumapis.com"

// DefaultConfigurationName names the webhook configurations Configurations
// returns.
const DefaultConfigurationName = "compute-manager"

// ClientConfig says how a project plane's API server reaches the webhook
// server.
type ClientConfig struct {
	// URL is the webhook server's base URL as the API server reaches it,
	// e.g. "https://compute-manager.example.com:9443". Exactly one of URL
	// and Service is set.
	URL string
	// Service is the in-cluster Service in front of the webhook server; its
	// Path is ignored.
	Service *admissionregistrationv1.ServiceReference
	// CABundle is the PEM bundle that verifies the webhook server's
	// certificate.
	CABundle []byte
	// Cluster is the name compute-manager knows this project plane by; the
	// paths carry it (multi-project mode). Empty in single mode.
	Cluster string
	// Name names the configurations; DefaultConfigurationName when empty.
	Name string
	// SkipProjectionWriters are user names whose requests the API server
	// does not send to the projection guard at all (a match condition,
	// see SkipUsersCondition): compute-manager's own identity in the
	// plane, which the guard would admit anyway. Every projection the
	// manager creates, patches or writes the status of otherwise costs
	// an admission round trip — three or four per Instance. Anyone not
	// listed is still reviewed, the manager included.
	SkipProjectionWriters []string
}

// skipUsers returns the match conditions leaving users out, none without
// users.
func skipUsers(users []string) []admissionregistrationv1.MatchCondition {
	if len(users) == 0 {
		return nil
	}
	return []admissionregistrationv1.MatchCondition{SkipUsersCondition(users)}
}

// SkipUsersCondition is the match condition that leaves the requests of
// users out of a webhook.
func SkipUsersCondition(users []string) admissionregistrationv1.MatchCondition {
	quoted := make([]string, len(users))
	for i, u := range users {
		quoted[i] = strconv.Quote(u)
	}
	return admissionregistrationv1.MatchCondition{
		Name:       "not-a-skipped-writer",
		Expression: "!(request.userInfo.username in [" + strings.Join(quoted, ", ") + "])",
	}
}

// Configurations returns the mutating and validating webhook
// configurations that register compute's webhooks with one project plane.
// They match the manifests generated into config/webhook from the markers
// of this package, with the client configuration filled in: install them
// in every project plane of multi-project mode (each with its Cluster), or
// use them in tests and the local platform.
func Configurations(cc ClientConfig) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	name := cc.Name
	if name == "" {
		name = DefaultConfigurationName
	}
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	workloads := []admissionregistrationv1.RuleWithOperations{rule([]string{"workloads"},
		admissionregistrationv1.Create, admissionregistrationv1.Update)}

	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "default.workloads.compute.datumapis.com",
			ClientConfig:            cc.webhookClientConfig(DefaultWorkloadPath),
			Rules:                   workloads,
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{
				Name:                    "validate.workloads.compute.datumapis.com",
				ClientConfig:            cc.webhookClientConfig(ValidateWorkloadPath),
				Rules:                   workloads,
				FailurePolicy:           &fail,
				SideEffects:             &none,
				AdmissionReviewVersions: []string{"v1"},
				TimeoutSeconds:          ptr.To[int32](10),
			},
			{
				Name:         ProjectionGuardName,
				ClientConfig: cc.webhookClientConfig(ValidateProjectionPath),
				Rules: []admissionregistrationv1.RuleWithOperations{rule([]string{"instances", "instances/status"},
					admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete)},
				// Only projections: the API server matches the selector
				// against the old and the new object.
				ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: computev1alpha.ProjectionLabel, Operator: metav1.LabelSelectorOpExists,
				}}},
				MatchConditions:         skipUsers(cc.SkipProjectionWriters),
				FailurePolicy:           &fail,
				SideEffects:             &none,
				AdmissionReviewVersions: []string{"v1"},
				TimeoutSeconds:          ptr.To[int32](10),
			},
			{
				Name:         InstanceTypeWebhookName,
				ClientConfig: cc.webhookClientConfig(ValidateInstanceTypePath),
				Rules: []admissionregistrationv1.RuleWithOperations{clusterRule([]string{"instancetypes"},
					admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete)},
				FailurePolicy:           &fail,
				SideEffects:             &none,
				AdmissionReviewVersions: []string{"v1"},
				TimeoutSeconds:          ptr.To[int32](10),
			},
		},
	}
	return mutating, validating
}

// webhookClientConfig returns the client configuration of path.
func (cc ClientConfig) webhookClientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	if cc.Cluster != "" {
		path = ClusterPath(cc.Cluster, path)
	}
	out := admissionregistrationv1.WebhookClientConfig{CABundle: cc.CABundle}
	if cc.Service != nil {
		svc := *cc.Service
		svc.Path = ptr.To(path)
		out.Service = &svc
		return out
	}
	out.URL = ptr.To(strings.TrimSuffix(cc.URL, "/") + path)
	return out
}

// rule matches compute.datumapis.com/v1alpha resources on ops.
func rule(resources []string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{computev1alpha.GroupVersion.Group},
			APIVersions: []string{computev1alpha.GroupVersion.Version},
			Resources:   resources,
			Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
		},
	}
}

// clusterRule matches cluster-scoped compute.datumapis.com/v1alpha
// resources on ops.
func clusterRule(resources []string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
	r := rule(resources, ops...)
	r.Scope = ptr.To(admissionregistrationv1.ClusterScope)
	return r
}
