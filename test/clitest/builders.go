package clitest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Epoch is the fixed time printer tests render against.
var Epoch = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// WorkloadBuilder builds Workloads: NewWorkload is valid, each method
// changes one thing.
type WorkloadBuilder struct{ w computev1alpha.Workload }

// NewWorkload returns a workload running ghcr.io/acme/web:1.0 with port
// http:8080 on datumcloud/d1-standard-2, 2 instances in DFW and LHR.
func NewWorkload(name string) *WorkloadBuilder {
	b := &WorkloadBuilder{}
	b.w.Name = name
	b.w.Namespace = "default"
	b.w.Spec.Template.Spec.Runtime.Resources.InstanceType = "datumcloud/d1-standard-2"
	b.w.Spec.Template.Spec.Runtime.Sandbox = &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
		Name: "app", Image: "ghcr.io/acme/web:1.0",
		Ports: []computev1alpha.NamedPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}},
	}}}
	b.w.Spec.Placements = []computev1alpha.WorkloadPlacement{{
		Name: "default", CityCodes: []string{"DFW", "LHR"},
		ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 2,
			InstanceManagementPolicy: computev1alpha.OrderedReadyInstanceManagementPolicy},
	}}
	b.w.Spec.RevisionHistoryLimit = ptr.To(int32(10))
	return b
}

// Namespace sets the namespace.
func (b *WorkloadBuilder) Namespace(ns string) *WorkloadBuilder { b.w.Namespace = ns; return b }

// Image sets the image of the first container.
func (b *WorkloadBuilder) Image(image string) *WorkloadBuilder {
	b.w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = image
	return b
}

// Placement replaces the placements with one named name: min instances in
// each of cities.
func (b *WorkloadBuilder) Placement(name string, min int32, cities ...string) *WorkloadBuilder {
	b.w.Spec.Placements = []computev1alpha.WorkloadPlacement{{Name: name, CityCodes: cities,
		ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: min,
			InstanceManagementPolicy: computev1alpha.OrderedReadyInstanceManagementPolicy}}}
	return b
}

// AddPlacement adds a placement.
func (b *WorkloadBuilder) AddPlacement(name string, min int32, cities ...string) *WorkloadBuilder {
	b.w.Spec.Placements = append(b.w.Spec.Placements, computev1alpha.WorkloadPlacement{Name: name, CityCodes: cities,
		ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: min,
			InstanceManagementPolicy: computev1alpha.OrderedReadyInstanceManagementPolicy}})
	return b
}

// Env adds an environment variable to the first container.
func (b *WorkloadBuilder) Env(name, value string) *WorkloadBuilder {
	c := &b.w.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
	c.Env = append(c.Env, computev1alpha.EnvVar{Name: name, Value: value})
	return b
}

// Created sets the creation time (for printer tests).
func (b *WorkloadBuilder) Created(t time.Time) *WorkloadBuilder {
	b.w.CreationTimestamp = metav1.NewTime(t)
	return b
}

// Status sets the status through f (for printer tests).
func (b *WorkloadBuilder) Status(f func(*computev1alpha.WorkloadStatus)) *WorkloadBuilder {
	f(&b.w.Status)
	return b
}

// Available sets the Available condition (for printer tests).
func (b *WorkloadBuilder) Available(status metav1.ConditionStatus, reason, message string) *WorkloadBuilder {
	meta.SetStatusCondition(&b.w.Status.Conditions, metav1.Condition{Type: computev1alpha.ConditionAvailable,
		Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(Epoch)})
	return b
}

// Edit changes the workload through f, for what the other methods do not
// cover (clilive.Held: a rollout the simulated provider holds).
func (b *WorkloadBuilder) Edit(f func(*computev1alpha.Workload)) *WorkloadBuilder {
	f(&b.w)
	return b
}

// Build returns the workload.
func (b *WorkloadBuilder) Build() *computev1alpha.Workload { return b.w.DeepCopy() }
