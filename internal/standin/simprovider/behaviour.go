package simprovider

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/referenceddata"
	"github.com/citycells/compute/internal/webhook/validation"
)

// FailAnnotation on an Instance (usually set through the instance
// template) makes the simulated provider fail it with the reason it names.
const FailAnnotation = "simulator.compute.datumapis.com/fail"

// HoldAnnotation on an Instance (usually set through the instance template)
// keeps it Provisioning for as long as it is there, whatever the delay:
// the state of an instance a slow runtime is still starting, held until a
// test (or a demo) removes the annotation, when provisioning finishes (at
// once if the delay has passed). An instance already placed is not held.
const HoldAnnotation = "simulator.compute.datumapis.com/hold"

// Finalizer gates the deletion of every Instance the provider runs until it
// has torn it down.
const Finalizer = "simulator.compute.datumapis.com/provider"

// Provider condition reasons that have no constant in the API because only
// a provider uses them.
const (
	// ReasonProgrammed: the provider has placed the instance.
	ReasonProgrammed = "Programmed"
)

// outcome is what the provider reports for an Instance at one moment.
type outcome struct {
	programmed metav1.Condition
	available  metav1.Condition
	// addresses says whether the instance holds network addresses.
	addresses bool
	// requeueAfter is when to look again; zero when the outcome is final.
	requeueAfter time.Duration
}

// decide returns what the provider reports for a live, ungated Instance
// at now, given the provisioning delay, when provisioning started and the
// tokens ("Kind/name") of the expected companions missing in the cell.
func decide(inst *computev1alpha.Instance, missing []string, now, started time.Time, delay time.Duration) outcome {
	if msg := configurationProblem(inst, missing); msg != "" {
		return rejected(msg)
	}
	if _, held := inst.Annotations[HoldAnnotation]; held && stillProvisioning(inst) {
		// No requeue: removing the annotation is an event of its own.
		return outcome{
			programmed: condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "the simulated provider is placing the instance"),
			available: condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, computev1alpha.ReasonProvisioning,
				"the instance is being provisioned (held by annotation "+HoldAnnotation+")"),
		}
	}
	if remaining := provisioningLeft(inst, now, started, delay); remaining > 0 {
		return outcome{
			programmed:   condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "the simulated provider is placing the instance"),
			available:    condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "the instance is being provisioned"),
			requeueAfter: remaining,
		}
	}
	programmed := condition(computev1alpha.ConditionProgrammed, metav1.ConditionTrue, ReasonProgrammed, "the simulated provider placed the instance")
	switch failure, ok := inst.Annotations[FailAnnotation]; {
	case !ok:
		return outcome{programmed: programmed, addresses: true,
			available: condition(computev1alpha.ConditionAvailable, metav1.ConditionTrue, computev1alpha.ReasonAvailable, "the instance is running")}
	case failure == computev1alpha.ReasonImageUnavailable:
		image := imageOf(inst)
		return outcome{programmed: programmed, addresses: true,
			available: condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, computev1alpha.ReasonImageUnavailable,
				fmt.Sprintf("failed to pull image %q: rpc error: code = NotFound desc = failed to resolve reference %q: not found", image, image))}
	case failure == computev1alpha.ReasonInstanceCrashing:
		return outcome{programmed: programmed, addresses: true,
			available: condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, computev1alpha.ReasonInstanceCrashing,
				fmt.Sprintf("%s exited with code 1; back-off restarting failed %s", workloadOf(inst), workloadOf(inst)))}
	case failure == computev1alpha.ReasonConfigurationError:
		msg := fmt.Sprintf("the runtime rejected the instance configuration: %s: exec: %q: executable file not found in $PATH", workloadOf(inst), entrypointOf(inst))
		return rejected(msg)
	default:
		return rejected(fmt.Sprintf("unknown simulated failure %q in annotation %s; use %s, %s or %s", failure, FailAnnotation,
			computev1alpha.ReasonImageUnavailable, computev1alpha.ReasonInstanceCrashing, computev1alpha.ReasonConfigurationError))
	}
}

// configurationProblem returns why a provider cannot run inst at all — a
// companion of a referenced Secret or ConfigMap missing in the cell, a
// virtual machine with nothing to boot — or "" when it can.
func configurationProblem(inst *computev1alpha.Instance, missing []string) string {
	if len(missing) > 0 {
		parts := make([]string, len(missing))
		for i, token := range missing {
			kind, name, _ := referenceddata.ParseToken(token)
			parts[i] = fmt.Sprintf("%s %q (the cell's copy of the project's %s %q)", kind, referenceddata.CompanionNameOfToken(token), kind, name)
		}
		verb := "does"
		if len(missing) > 1 {
			verb = "do"
		}
		return fmt.Sprintf("%s %s not exist in namespace %s of the cell; the instance starts once it is delivered",
			strings.Join(parts, ", "), verb, inst.Namespace)
	}
	vm := inst.Spec.Runtime.VirtualMachine
	if vm == nil {
		return ""
	}
	if len(vm.VolumeAttachments) == 0 {
		return "the virtual machine has no bootable disk: attach a disk volume populated from an image first"
	}
	boot := vm.VolumeAttachments[0].Name
	for _, v := range inst.Spec.Volumes {
		if v.Name == boot && validation.BootImage(v.Disk) != "" {
			return ""
		}
	}
	return fmt.Sprintf("the virtual machine has no bootable disk: its first volume attachment %q is not a disk populated from an image", boot)
}

// rejected is the outcome of an instance the provider refuses to place.
func rejected(msg string) outcome {
	return outcome{
		programmed: condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonConfigurationError, msg),
		available:  condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, computev1alpha.ReasonConfigurationError, msg),
	}
}

// provisioningLeft returns how much of the provisioning delay is left:
// none once the provider has reported anything but Provisioning, else the
// delay minus the time since provisioning started.
func provisioningLeft(inst *computev1alpha.Instance, now, started time.Time, delay time.Duration) time.Duration {
	if delay <= 0 {
		return 0
	}
	if p := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionProgrammed); p != nil && p.Reason != computev1alpha.ReasonProvisioning {
		return 0
	}
	return delay - now.Sub(started)
}

// placed reports whether the provider has placed inst (Programmed True):
// from then on it runs whatever happens to its companions.
func placed(inst *computev1alpha.Instance) bool {
	return meta.IsStatusConditionTrue(inst.Status.Conditions, computev1alpha.ConditionProgrammed)
}

// stillProvisioning reports whether the provider has not placed inst yet:
// it reported nothing, or Provisioning.
func stillProvisioning(inst *computev1alpha.Instance) bool {
	p := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionProgrammed)
	return p == nil || p.Reason == computev1alpha.ReasonProvisioning
}

// provisioningStart returns when provisioning of an Instance started, as
// far as its status tells: the transition time of the provider's
// Provisioning condition (second precision), or now when there is none.
func provisioningStart(inst *computev1alpha.Instance, now time.Time) time.Time {
	if p := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionProgrammed); p != nil && p.Reason == computev1alpha.ReasonProvisioning {
		return p.LastTransitionTime.Time
	}
	return now
}

// teardownLeft returns how much of the teardown delay is left for a
// deleting Instance.
func teardownLeft(inst *computev1alpha.Instance, now time.Time, delay time.Duration) time.Duration {
	if delay <= 0 || inst.DeletionTimestamp == nil {
		return 0
	}
	return delay - now.Sub(inst.DeletionTimestamp.Time)
}

// condition builds a provider condition.
func condition(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
}

// imageOf names what the instance boots: its first container's image, or
// its boot volume's image.
func imageOf(inst *computev1alpha.Instance) string {
	rt := inst.Spec.Runtime
	if rt.Sandbox != nil && len(rt.Sandbox.Containers) > 0 {
		return rt.Sandbox.Containers[0].Image
	}
	if rt.VirtualMachine != nil && len(rt.VirtualMachine.VolumeAttachments) > 0 {
		boot := rt.VirtualMachine.VolumeAttachments[0].Name
		for _, v := range inst.Spec.Volumes {
			if img := validation.BootImage(v.Disk); v.Name == boot && img != "" {
				return img
			}
		}
		return boot
	}
	return "unknown"
}

// workloadOf names what runs in the instance, for messages.
func workloadOf(inst *computev1alpha.Instance) string {
	rt := inst.Spec.Runtime
	if rt.Sandbox != nil && len(rt.Sandbox.Containers) > 0 {
		return fmt.Sprintf("container %q", rt.Sandbox.Containers[0].Name)
	}
	return "virtual machine"
}

// entrypointOf names the instance's entrypoint, for messages.
func entrypointOf(inst *computev1alpha.Instance) string {
	rt := inst.Spec.Runtime
	if rt.Sandbox != nil && len(rt.Sandbox.Containers) > 0 && len(rt.Sandbox.Containers[0].Command) > 0 {
		return rt.Sandbox.Containers[0].Command[0]
	}
	return "/sbin/init"
}
