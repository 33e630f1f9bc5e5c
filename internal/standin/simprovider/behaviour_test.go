package simprovider

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

var t0 = time.Date(2026, 6, 5, 12, 0, 0, 0, time.UTC)

// instBuilder builds Instances.
type instBuilder struct{ i computev1alpha.Instance }

func makeInst() *instBuilder {
	return &instBuilder{i: computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns"},
		Spec: computev1alpha.InstanceSpec{Runtime: computev1alpha.InstanceRuntimeSpec{
			Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: "ghcr.io/x/app:1", Command: []string{"/app"}}}},
		}},
	}}
}

func (b *instBuilder) failing(reason string) *instBuilder {
	b.i.Annotations = map[string]string{FailAnnotation: reason}
	return b
}

func (b *instBuilder) holding() *instBuilder {
	if b.i.Annotations == nil {
		b.i.Annotations = map[string]string{}
	}
	b.i.Annotations[HoldAnnotation] = "true"
	return b
}

func (b *instBuilder) provisioningSince(at time.Time) *instBuilder {
	b.i.Status.Conditions = append(b.i.Status.Conditions, metav1.Condition{
		Type: computev1alpha.ConditionProgrammed, Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonProvisioning, LastTransitionTime: metav1.NewTime(at),
	})
	return b
}

func (b *instBuilder) programmed() *instBuilder {
	b.i.Status.Conditions = append(b.i.Status.Conditions, metav1.Condition{Type: computev1alpha.ConditionProgrammed, Status: metav1.ConditionTrue, Reason: ReasonProgrammed})
	return b
}

func (b *instBuilder) vm(image string) *instBuilder {
	b.i.Spec.Runtime.Sandbox = nil
	b.i.Spec.Runtime.VirtualMachine = &computev1alpha.VirtualMachineRuntime{VolumeAttachments: []computev1alpha.VolumeAttachment{{Name: "boot"}}}
	b.i.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "boot", Disk: &computev1alpha.DiskTemplateVolumeSource{Image: image}}}
	return b
}

func (b *instBuilder) with(f func(*computev1alpha.Instance)) *instBuilder {
	f(&b.i)
	return b
}

func TestDecide(t *testing.T) {
	type want struct {
		Programmed, Available string // "Status/Reason"
		Message               string // of Available
		Addresses             bool
		RequeueAfter          time.Duration
	}
	tests := map[string]struct {
		inst    *instBuilder
		missing []string
		started time.Time
		delay   time.Duration
		want    want
	}{
		"without a delay the instance runs at once": {
			inst: makeInst(), started: t0,
			want: want{"True/Programmed", "True/Available", "the instance is running", true, 0},
		},
		"with a delay the instance is provisioned first": {
			inst: makeInst(), started: t0, delay: 5 * time.Second,
			want: want{"False/Provisioning", "False/Provisioning", "the instance is being provisioned", false, 5 * time.Second},
		},
		"the delay counts from when provisioning started": {
			inst: makeInst().provisioningSince(t0.Add(-3 * time.Second)), started: t0.Add(-3 * time.Second), delay: 5 * time.Second,
			want: want{"False/Provisioning", "False/Provisioning", "the instance is being provisioned", false, 2 * time.Second},
		},
		"after the delay the instance runs": {
			inst: makeInst().provisioningSince(t0.Add(-6 * time.Second)), started: t0.Add(-6 * time.Second), delay: 5 * time.Second,
			want: want{"True/Programmed", "True/Available", "the instance is running", true, 0},
		},
		"a held instance stays provisioning past the delay, with no requeue": {
			inst: makeInst().holding().provisioningSince(t0.Add(-time.Hour)), started: t0.Add(-time.Hour), delay: 5 * time.Second,
			want: want{"False/Provisioning", "False/Provisioning", "the instance is being provisioned (held by annotation simulator.compute.datumapis.com/hold)", false, 0},
		},
		"a held instance is held without a delay too": {
			inst: makeInst().holding(), started: t0,
			want: want{"False/Provisioning", "False/Provisioning", "the instance is being provisioned (held by annotation simulator.compute.datumapis.com/hold)", false, 0},
		},
		"a placed instance is not held": {
			inst: makeInst().programmed().holding(), started: t0, delay: 5 * time.Second,
			want: want{"True/Programmed", "True/Available", "the instance is running", true, 0},
		},
		"a configuration problem wins over a hold": {
			inst: makeInst().vm("").holding(), started: t0,
			want: want{"False/ConfigurationError", "False/ConfigurationError", `the virtual machine has no bootable disk: its first volume attachment "boot" is not a disk populated from an image`, false, 0},
		},
		"an instance past provisioning does not wait again": {
			inst: makeInst().programmed().failing(computev1alpha.ReasonInstanceCrashing), started: t0, delay: time.Hour,
			want: want{"True/Programmed", "False/InstanceCrashing", `container "app" exited with code 1; back-off restarting failed container "app"`, true, 0},
		},
		"an image that cannot be pulled names the image": {
			inst: makeInst().failing(computev1alpha.ReasonImageUnavailable), started: t0,
			want: want{"True/Programmed", "False/ImageUnavailable", `failed to pull image "ghcr.io/x/app:1": rpc error: code = NotFound desc = failed to resolve reference "ghcr.io/x/app:1": not found`, true, 0},
		},
		"a virtual machine's boot image is named": {
			inst: makeInst().vm("ubuntu-24.04").failing(computev1alpha.ReasonImageUnavailable), started: t0,
			want: want{"True/Programmed", "False/ImageUnavailable", `failed to pull image "ubuntu-24.04": rpc error: code = NotFound desc = failed to resolve reference "ubuntu-24.04": not found`, true, 0},
		},
		"a rejected configuration is not programmed and gets no address": {
			inst: makeInst().failing(computev1alpha.ReasonConfigurationError), started: t0,
			want: want{"False/ConfigurationError", "False/ConfigurationError", `the runtime rejected the instance configuration: container "app": exec: "/app": executable file not found in $PATH`, false, 0},
		},
		"missing companions of a Secret and a ConfigMap are named, before any provisioning": {
			inst: makeInst(), started: t0, delay: time.Minute,
			missing: []string{"ConfigMap/app", "Secret/db"},
			want: want{"False/ConfigurationError", "False/ConfigurationError",
				`ConfigMap "configmap.app" (the cell's copy of the project's ConfigMap "app"), Secret "secret.db" (the cell's copy of the project's Secret "db") do not exist in namespace ns of the cell; the instance starts once it is delivered`, false, 0},
		},
		"one missing companion is named": {
			inst: makeInst(), started: t0,
			missing: []string{"Secret/db"},
			want: want{"False/ConfigurationError", "False/ConfigurationError",
				`Secret "secret.db" (the cell's copy of the project's Secret "db") does not exist in namespace ns of the cell; the instance starts once it is delivered`, false, 0},
		},
		"a virtual machine whose boot disk has no image is rejected": {
			inst: makeInst().vm(""), started: t0,
			want: want{"False/ConfigurationError", "False/ConfigurationError", `the virtual machine has no bootable disk: its first volume attachment "boot" is not a disk populated from an image`, false, 0},
		},
		"a virtual machine booting from a template disk runs": {
			inst: makeInst().vm("").with(func(i *computev1alpha.Instance) {
				i.Spec.Volumes[0].Disk = &computev1alpha.DiskTemplateVolumeSource{Template: &computev1alpha.DiskTemplateVolumeSourceTemplate{
					Spec: computev1alpha.DiskSpec{Populator: &computev1alpha.DiskPopulator{Image: &computev1alpha.ImageDiskPopulator{Name: "ubuntu"}}},
				}}
			}), started: t0,
			want: want{"True/Programmed", "True/Available", "the instance is running", true, 0},
		},
		"an unknown failure says which are known": {
			inst: makeInst().failing("Meltdown"), started: t0,
			want: want{"False/ConfigurationError", "False/ConfigurationError", `unknown simulated failure "Meltdown" in annotation simulator.compute.datumapis.com/fail; use ImageUnavailable, InstanceCrashing or ConfigurationError`, false, 0},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := decide(&tc.inst.i, tc.missing, t0, tc.started, tc.delay)
			got := want{
				Programmed:   string(o.programmed.Status) + "/" + o.programmed.Reason,
				Available:    string(o.available.Status) + "/" + o.available.Reason,
				Message:      o.available.Message,
				Addresses:    o.addresses,
				RequeueAfter: o.requeueAfter,
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcome mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTeardownLeft(t *testing.T) {
	inst := makeInst()
	inst.i.DeletionTimestamp = &metav1.Time{Time: t0}
	if got := teardownLeft(&inst.i, t0.Add(time.Second), 3*time.Second); got != 2*time.Second {
		t.Errorf("teardownLeft = %s, want 2s", got)
	}
	if got := teardownLeft(&inst.i, t0.Add(time.Second), 0); got != 0 {
		t.Errorf("teardownLeft without a delay = %s, want 0", got)
	}
}

func TestProvisioningStart(t *testing.T) {
	if got := provisioningStart(&makeInst().i, t0); !got.Equal(t0) {
		t.Errorf("an untouched instance starts now, got %s", got)
	}
	since := t0.Add(-time.Minute)
	if got := provisioningStart(&makeInst().provisioningSince(since).i, t0); !got.Equal(since) {
		t.Errorf("a provisioning instance started at its transition, got %s", got)
	}
}
