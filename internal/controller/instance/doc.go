// Package instance holds the cell-role InstanceReconciler. For every
// Instance in the cell it
//
//   - decides QuotaGranted: True with reason QuotaDisabled when no quota
//     backend is configured, otherwise what the QuotaClient reports;
//   - removes the Quota scheduling gate once QuotaGranted, as evaluated, is
//     True for the Instance's current generation, in the same reconcile that
//     observes the grant (the patch guarded by the resourceVersion the grant
//     was evaluated for);
//   - removes the ReferencedData scheduling gate (put by the
//     WorkloadDeployment controller on the Instances of a template that
//     reads ConfigMaps or Secrets) once every companion the deployment's
//     annotations expect is in the Instance's namespace at its hash
//     (referenceddata.Decide over the present set read by package
//     companions from a label-selected metadata cache), writing
//     ReferencedDataReady with the verdict while the gate holds and
//     observing compute_referenced_data_gate_wait_seconds when it goes.
//     The gate is only ever removed: an Instance that runs keeps running
//     when a companion goes later;
//   - computes the Ready condition from what it observes: the gates still
//     present, the quota decision, and the Programmed and Available
//     conditions of the runtime provider;
//   - emits a Warning event whenever an Instance starts failing for a reason
//     a person must act on (a quota refusal or backend failure, a provider
//     failure);
//   - holds a finalizer while a quota backend is configured (the
//     WorkloadDeployment controller creates Instances with it; this
//     controller adds it to any Instance without it), releasing the
//     Instance's claim before the Instance goes; a claim whose project
//     cannot be resolved is reported (QuotaClaimOrphaned) and the Instance
//     still goes;
//   - writes nothing for a young Instance (InitialReportGrace) whose status
//     would only say that nothing has happened yet — its claim pending, or
//     the provider not having reported — so that the grant or the
//     provider's first report, moments later, is reported together with
//     Ready in one write. Refusals and failures are written at once.
//
// With no quota backend, new Instances carry no Quota gate (nothing would
// hold them): QuotaGranted (QuotaDisabled) and Ready are written once the
// provider reports. Per Instance the cell then writes: the create, the
// provider's status, and this controller's status — three writes. With
// quota, a grant that lands within InitialReportGrace is not written on its
// own: the gate removal is the one added write, and QuotaGranted=True is
// written with Ready when the provider reports — four writes. A grant that
// comes later finds its waiting reported and is written before the gate
// goes, with Ready as the Instance is once the gate is gone (waiting for
// the provider), so the event of the release finds nothing to write.
//
// It calls the quota backend as internal/quota's package documentation
// prescribes: QuotaGranted (with observedGeneration) is written before
// anything else can fail whenever it has something to say (a refusal, a
// failure, a wait past the grace), and while quota is not granted the
// Instance is requeued on quota.RequeueAfter — also when the backend could
// not be asked and when a write conflicts — never in error backoff. A
// backend that implements QuotaWatcher (quota.Client over static quota
// planes) also enqueues an Instance as soon as its claim changes.
//
// Its conditions are written with server-side apply under their own field
// manager, so the provider's conditions on the same Instance are never
// overwritten. Writing Instances back to the federation plane is another
// controller's job (internal/controller/writeback).
package instance
