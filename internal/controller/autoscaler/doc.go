// Package autoscaler holds the cell-role autoscaler controller: for each
// WorkloadDeployment whose scaleSettings autoscale (maxReplicas and
// metrics set) it keeps one autoscaling/v2 HorizontalPodAutoscaler in the
// cell, named as the deployment, in its namespace, controlled by it, whose
// target is the deployment's scale subresource and whose bounds and
// resource metrics are the placement's. The cell's HPA controller then
// writes spec.replicas through that subresource, and the
// WorkloadDeployment controller creates and deletes Instances to match.
//
// It never adopts or changes an HPA of that name it did not create
// (AutoscalingReady=False, AutoscalerNotOwned), deletes its own when
// autoscaling is removed, while the deployment is suspended
// (AutoscalingSuspended; recreated on resume) and while the cell serves no
// resource metrics API (MetricsUnavailable, looked for again every
// RecheckAfter): an HPA without metrics would never scale, and compute does
// not scale on a guess. While no HPA of compute's acts, the
// WorkloadDeployment controller holds the deployment at minReplicas (see
// its desiredReplicas).
//
// It reports the HPA's verdicts on the deployment: AutoscalingReady from
// the HPA's AbleToScale and ScalingActive conditions (a False one wins,
// with its reason and message; both True is AutoscalerReady; no verdict
// yet is Unknown, AwaitingAutoscaler), AutoscalingLimited from
// ScalingLimited, and status.autoscaling (the bounds, the desired and
// current replicas, the last scale time and each metric against its
// target). All three are removed when autoscaling is.
package autoscaler
