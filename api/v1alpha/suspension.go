package v1alpha

// Suspension: Datum's reversible stop (enhancement project-suspension). A
// suspended WorkloadDeployment's cell stops every Instance without deleting
// it: the runtime provider releases what runs (the Kubernetes provider
// deletes the Pod), the Instance, its name and its quota claim stay, and
// resuming brings the same Instances back.
//
// Who writes what:
//
//   - SuspendedAnnotation on a Workload is the request. `datumctl-compute
//     suspend` sets it to "true" and `resume` removes it; a platform that
//     suspends a whole project sets it on every Workload of the project.
//   - The management plane carries it onto each of the Workload's
//     WorkloadDeployments (Datum's contract: the annotation on the project
//     WorkloadDeployment), the federator onto the hub copy, Karmada onto
//     the cell copy.
//   - The cell puts it on each Instance; the runtime provider stops the
//     Instance (Available False, reason Suspended); compute then sets the
//     Instance's status.suspended, and the WorkloadDeployment's once every
//     Instance is stopped, which travels back up as any status does.
const (
	// SuspendedAnnotation requests that the cell stop (value "true") the
	// Instances of a WorkloadDeployment; absent, or any other value, runs
	// them. Datum's name and values.
	SuspendedAnnotation = "compute.datumapis.com/suspended"
	// SuspendedAnnotationValue is the value that suspends.
	SuspendedAnnotationValue = "true"

	// ReasonSuspended: the Instance is stopped because its workload is
	// suspended (Ready and the provider's Available and Programmed on an
	// Instance; Available and ReplicasReady on a WorkloadDeployment and
	// Workload while suspending or suspended). Datum's draft illustrates
	// the same state with ProjectSuspended; compute suspends a workload as
	// well as a project, so its reason names neither.
	ReasonSuspended = "Suspended"

	// EventProjectPaused (Normal) on a WorkloadDeployment: every Instance
	// of it stopped. Datum's event reason.
	EventProjectPaused = "ProjectPaused"
	// EventProjectResumed (Normal) on a WorkloadDeployment: the suspension
	// was lifted and its Instances are being started again. Datum's event
	// reason.
	EventProjectResumed = "ProjectResumed"
	// EventPauseFailed (Warning) on a WorkloadDeployment: an Instance could
	// not be told to stop or start; compute retries. Nothing is deleted for
	// it. Datum's event reason.
	EventPauseFailed = "PauseFailed"
)

// IsSuspended reports whether annotations request suspension.
func IsSuspended(annotations map[string]string) bool {
	return annotations[SuspendedAnnotation] == SuspendedAnnotationValue
}
