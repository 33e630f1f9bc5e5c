// Package instance holds the cell-role InstanceReconciler. For every
// Instance in the cell it
//
//   - decides QuotaGranted: True with reason QuotaDisabled when no quota
//     backend is configured, otherwise what the QuotaClient reports;
//   - removes the Quota scheduling gate once QuotaGranted is True for the
//     Instance's current generation;
//   - computes the Ready condition from what it observes: the gates still
//     present, the quota decision, and the Programmed and Available
//     conditions of the runtime provider;
//   - emits a Warning event whenever an Instance starts failing for a reason
//     a person must act on.
//
// Its conditions are written with server-side apply under their own field
// manager, so the provider's conditions on the same Instance are never
// overwritten.
//
// Writing Instances back to the federation plane is a later step: it slots
// in after the status step of Reconcile (and before the finalizer is
// released in reconcileDelete), behind its own client field.
package instance
