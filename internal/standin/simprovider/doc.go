// Package simprovider is the simulated runtime provider the local platform
// and the tests run in place of a real one (which lives outside the
// product). It plays the provider's part of the Instance contract:
//
//   - it acts only on Instances without scheduling gates;
//   - it stops a suspended Instance (annotation
//     compute.datumapis.com/suspended: "true") at once: Programmed and
//     Available False, reason Suspended, addresses released; the Instance
//     and the finalizer stay, and it is placed again on resume;
//   - with a delay, it holds its own finalizer on every Instance it runs,
//     so deleting an Instance is gated on the provider's teardown, as with
//     a real provider; with no delay the teardown is immediate and it
//     holds none (addresses are released when the Instance is gone);
//   - after a configurable delay it sets Programmed and Available,
//     status.controller.observedTemplateHash and one address per network
//     interface from the cell's range (and an external address when an
//     external range is configured) — unless the networking integration
//     records the addresses (AddressesFromNetwork), when it writes none;
//   - it refuses, with ConfigurationError and a message naming what is
//     wrong, an Instance it cannot run whatever the delay: one it has not
//     placed yet while a companion its WorkloadDeployment expects (see
//     api/v1alpha/referenceddata.go) is not in the cell — the
//     ReferencedData gate normally holds such an Instance; this is a
//     runtime's defence, as a real one fails to start a Pod without its
//     Secret — and a virtual machine whose first volume attachment is not
//     a disk populated from an image. An Instance it placed keeps running
//     when a companion goes later;
//   - the annotation simulator.compute.datumapis.com/fail on the Instance
//     (copied from the instance template) makes it fail the way a real
//     provider would: ImageUnavailable, InstanceCrashing or
//     ConfigurationError, each with a realistic message. Adding the
//     annotation to a running Instance makes it stop being available;
//     removing it recovers it.
//   - the annotation simulator.compute.datumapis.com/hold keeps an Instance
//     not yet placed Provisioning until it is removed: the state of an
//     instance a slow runtime is still starting, on demand (the CLI tests
//     hold instances to watch a rollout in progress).
//
// Like an external system it keeps its own state in what it writes: the
// provisioning delay is measured from the transition time of its
// Programmed=False/Provisioning condition, the teardown delay from the
// deletion timestamp. Its fields are written with server-side apply under
// FieldOwner, so compute's own conditions are never touched.
package simprovider
