package v1alpha

// Referenced data: the ConfigMaps and Secrets an instance template reads
// (volumes, env valueFrom, image pull secrets) reach the cells as
// "companions", Datum's design (RFC configmap-secret-mounts): the
// management plane copies each referenced object into the
// WorkloadDeployment's federation namespace, Karmada carries the companions
// with the WorkloadDeployment to exactly the cities that run it, and the
// cell holds Instances behind the ReferencedData scheduling gate until
// every expected companion is present at the expected version.
const (
	// ReferencedDataLabel marks a companion; its value is
	// ReferencedDataLabelValue.
	ReferencedDataLabel      = "compute.datumapis.com/referenced-data"
	ReferencedDataLabelValue = "true"

	// ExpectedReferencedDataAnnotation on a WorkloadDeployment (project,
	// hub and cell) is the JSON array, sorted, of the tokens "Kind/name"
	// (ConfigMap/app-config, Secret/db) of the objects its template
	// references that the cell must hold before an Instance runs. Absent:
	// the management plane has not resolved them yet. Written only by the
	// management plane.
	ExpectedReferencedDataAnnotation = "compute.datumapis.com/expected-referenced-data"
	// ReferencedDataHashesAnnotation on a WorkloadDeployment is compute's
	// addition to Datum's contract: a JSON object from each expected token
	// to the source version its companion must carry
	// (ReferencedDataHashAnnotation), so a cell never runs an Instance on a
	// companion older than what the management plane resolved.
	ReferencedDataHashesAnnotation = "compute.datumapis.com/referenced-data-hashes"
	// ReferencedDataTemplateHashAnnotation on a WorkloadDeployment is
	// compute's addition too: the hash of the template the expected set was
	// resolved for. A cell trusts the set only for that template, so an
	// Instance of a template that references something new waits for it
	// instead of running on the previous template's data.
	ReferencedDataTemplateHashAnnotation = "compute.datumapis.com/referenced-data-template-hash"
	// ReferencedDataErrorAnnotation on a WorkloadDeployment says why its
	// referenced data could not be resolved ("SourceNotFound: Secret db
	// does not exist ..."); absent when resolved.
	ReferencedDataErrorAnnotation = "compute.datumapis.com/referenced-data-error"
	// ReferencedDataHashAnnotation on a companion is the version of its
	// source: a hash of the source object's uid and resourceVersion, never
	// of its content (no readable fingerprint of a Secret).
	ReferencedDataHashAnnotation = "compute.datumapis.com/referenced-data-hash"
	// ReferencedDataSourceAnnotation on a companion is the token of the
	// project object it copies.
	ReferencedDataSourceAnnotation = "compute.datumapis.com/referenced-data-source"
	// ReferencedDataFinalizer on a project WorkloadDeployment that
	// references data lets the management plane release its companions
	// before it goes.
	ReferencedDataFinalizer = "compute.datumapis.com/referenced-data-controller"
	// ReferencedDataSchedulingGate holds an Instance whose template
	// references data until every expected companion is in its cell.
	ReferencedDataSchedulingGate = "ReferencedData"

	// ConditionReferencedDataReady on a WorkloadDeployment (management
	// plane: the sources were read and the companions written) and on an
	// Instance (cell: the companions are present).
	ConditionReferencedDataReady = "ReferencedDataReady"

	// ReasonResolving: the management plane has not resolved the
	// references yet.
	ReasonResolving = "Resolving"
	// ReasonAwaitingPropagation: a companion is not in the cell yet, or
	// not at the expected version.
	ReasonAwaitingPropagation = "AwaitingPropagation"
	// ReasonSourceNotFound: a referenced object does not exist.
	ReasonSourceNotFound = "SourceNotFound"
	// ReasonSourceUnauthorized: the Workload's author may not read a
	// referenced object.
	ReasonSourceUnauthorized = "SourceUnauthorized"
	// ReasonSourceTooLarge: a referenced object is over 256 KiB, or a
	// WorkloadDeployment's referenced data over 1 MiB.
	ReasonSourceTooLarge = "SourceTooLarge"
	// ReasonReferencedDataReady: every companion is written (management
	// plane) or present (cell). Datum's reason is "Ready".
	ReasonReferencedDataReady = "Ready"
)
