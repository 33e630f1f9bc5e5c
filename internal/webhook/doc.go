// Package webhook serves compute's admission webhooks on a controller-runtime
// webhook server (TLS from its certificate directory, no cert-manager):
//
//   - Workload defaulting (validation.DefaultWorkload) on create and update,
//     which also records who changed the template
//     (compute.datumapis.com/template-changed-by) for the revision history;
//   - Workload validation on create and update: every rule of package
//     validation, all errors at once with precise field paths, city codes
//     checked against the LocationBindings of the project namespace;
//   - the projection guard: Instances labelled compute.datumapis.com/projection
//     are read-only for everyone but the manager's own identity in that
//     project cluster (learned with a SelfSubjectReview) and any identities
//     configured as writers; the garbage collector and namespace controller
//     may delete them;
//   - InstanceType validation on create, update and delete
//     (validation.ValidateInstanceType*): created Active, cpu and memory
//     immutable, phases forward only, a replacement that exists and is
//     Active, Disabled only a grace period (Options.DeprecationGracePeriod,
//     30 days by default) after status.deprecatedAt, and a type another
//     live type names as its replacement neither deleted nor retired.
//
// # Clusters
//
// A webhook must know which project cluster called it, to read that
// project's LocationBindings. In single mode (Options.SingleCluster) the
// plain paths serve the one cluster. In multi-project mode every path
// carries the cluster: /clusters/<cluster>/<path> — an admission webhook URL
// may not have a query string — and each project plane registers the
// webhooks at its own path (see Configurations). A request for a cluster
// the manager has not engaged is refused with 503.
//
// +kubebuilder:webhook:path=/mutate-compute-datumapis-com-v1alpha-workload,mutating=true,failurePolicy=fail,sideEffects=None,groups=compute.datumapis.com,resources=workloads,verbs=create;update,versions=v1alpha,name=default.workloads.compute.datumapis.com,admissionReviewVersions=v1,timeoutSeconds=10
// +kubebuilder:webhook:path=/validate-compute-datumapis-com-v1alpha-workload,mutating=false,failurePolicy=fail,sideEffects=None,groups=compute.datumapis.com,resources=workloads,verbs=create;update,versions=v1alpha,name=validate.workloads.compute.datumapis.com,admissionReviewVersions=v1,timeoutSeconds=10
// +kubebuilder:webhook:path=/validate-compute-datumapis-com-v1alpha-instancetype,mutating=false,failurePolicy=fail,sideEffects=None,groups=compute.datumapis.com,resources=instancetypes,verbs=create;update;delete,versions=v1alpha,name=validate.instancetypes.compute.datumapis.com,admissionReviewVersions=v1,timeoutSeconds=10
// +kubebuilder:webhook:path=/validate-compute-datumapis-com-v1alpha-instance-projection,mutating=false,failurePolicy=fail,sideEffects=None,groups=compute.datumapis.com,resources=instances;instances/status,verbs=create;update;delete,versions=v1alpha,name=projection.instances.compute.datumapis.com,admissionReviewVersions=v1,timeoutSeconds=10
package webhook
