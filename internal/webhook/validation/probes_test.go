package validation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// withProbes sets the first container's probes.
func withProbes(readiness, liveness, startup *computev1alpha.Probe) func(*computev1alpha.Workload) {
	return func(w *computev1alpha.Workload) {
		c := &w.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
		c.ReadinessProbe, c.LivenessProbe, c.StartupProbe = readiness, liveness, startup
	}
}

func httpProbe(port intstr.IntOrString, path string) *computev1alpha.Probe {
	return &computev1alpha.Probe{HTTPGet: &computev1alpha.HTTPGetProbe{Port: port, Path: path}}
}

func TestProbes(t *testing.T) {
	env := bound("DFW", "LHR")
	const c0 = "spec.template.spec.runtime.sandbox.containers[0]."
	tests := map[string]struct {
		edit func(*computev1alpha.Workload)
		want []violation
	}{
		"an HTTP readiness probe on a named port, a TCP liveness probe by number and an exec startup probe are accepted": {
			edit: withProbes(httpProbe(intstr.FromString("http"), "/healthz"),
				&computev1alpha.Probe{TCPSocket: &computev1alpha.TCPSocketProbe{Port: intstr.FromInt32(8080)}, FailureThreshold: 3, TerminationGracePeriodSeconds: ptr.To[int64](5)},
				&computev1alpha.Probe{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}, PeriodSeconds: 1, FailureThreshold: 30}),
		},
		"a gRPC probe is accepted": {
			edit: withProbes(&computev1alpha.Probe{GRPC: &corev1.GRPCAction{Port: 9090}}, nil, nil),
		},
		"a probe with no check and one with two are refused": {
			edit: withProbes(&computev1alpha.Probe{PeriodSeconds: 5},
				&computev1alpha.Probe{Exec: &corev1.ExecAction{Command: []string{"true"}}, TCPSocket: &computev1alpha.TCPSocketProbe{Port: intstr.FromInt32(80)}}, nil),
			want: []violation{{field.ErrorTypeInvalid, c0 + "livenessProbe"}, {field.ErrorTypeInvalid, c0 + "readinessProbe"}},
		},
		"a port name the container does not declare, a port out of range and a relative path are refused": {
			edit: withProbes(httpProbe(intstr.FromString("admin"), "healthz"),
				&computev1alpha.Probe{TCPSocket: &computev1alpha.TCPSocketProbe{Port: intstr.FromInt32(70000)}}, nil),
			want: []violation{
				{field.ErrorTypeInvalid, c0 + "livenessProbe.tcpSocket.port"},
				{field.ErrorTypeInvalid, c0 + "readinessProbe.httpGet.path"},
				{field.ErrorTypeNotSupported, c0 + "readinessProbe.httpGet.port"},
			},
		},
		"an exec probe without a command, a bad header and a gRPC port of 0 are refused": {
			edit: withProbes(&computev1alpha.Probe{HTTPGet: &computev1alpha.HTTPGetProbe{Port: intstr.FromInt32(8080),
				HTTPHeaders: []corev1.HTTPHeader{{Name: "Bad Header", Value: "x"}}}},
				&computev1alpha.Probe{Exec: &corev1.ExecAction{}}, &computev1alpha.Probe{GRPC: &corev1.GRPCAction{}}),
			want: []violation{
				{field.ErrorTypeRequired, c0 + "livenessProbe.exec.command"},
				{field.ErrorTypeInvalid, c0 + "readinessProbe.httpGet.httpHeaders[0].name"},
				{field.ErrorTypeInvalid, c0 + "startupProbe.grpc.port"},
			},
		},
		"a liveness probe that must pass twice, a readiness grace period and a negative period are refused": {
			edit: withProbes(
				&computev1alpha.Probe{TCPSocket: &computev1alpha.TCPSocketProbe{Port: intstr.FromString("http")}, PeriodSeconds: -1, TerminationGracePeriodSeconds: ptr.To[int64](10)},
				&computev1alpha.Probe{TCPSocket: &computev1alpha.TCPSocketProbe{Port: intstr.FromString("http")}, SuccessThreshold: 2}, nil),
			want: []violation{
				{field.ErrorTypeInvalid, c0 + "livenessProbe.successThreshold"},
				{field.ErrorTypeInvalid, c0 + "readinessProbe.periodSeconds"},
				{field.ErrorTypeForbidden, c0 + "readinessProbe.terminationGracePeriodSeconds"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := violations(ValidateWorkloadCreate(makeWorkload().with(tc.edit).build(), env))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("ValidateWorkloadCreate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzValidateProbes drives a readiness probe's check, port and numbers:
// validation never panics, its errors point into the probe, and what it
// accepts has exactly one check on a port the container declares or a
// number in range.
func FuzzValidateProbes(f *testing.F) {
	f.Add(uint8(1), "http", int32(0), "/healthz", int32(10), int32(3))
	f.Add(uint8(3), "", int32(8080), "x", int32(-1), int32(101))
	f.Add(uint8(0), "admin", int32(70000), "", int32(0), int32(0))
	env := bound("DFW", "LHR")
	f.Fuzz(func(t *testing.T, checks uint8, portName string, portNumber int32, path string, period, failures int32) {
		port := intstr.FromInt32(portNumber)
		if portName != "" {
			port = intstr.FromString(portName)
		}
		pr := &computev1alpha.Probe{PeriodSeconds: period, FailureThreshold: failures}
		if checks&1 != 0 {
			pr.HTTPGet = &computev1alpha.HTTPGetProbe{Port: port, Path: path}
		}
		if checks&2 != 0 {
			pr.TCPSocket = &computev1alpha.TCPSocketProbe{Port: port}
		}
		w := makeWorkload().with(withProbes(pr, nil, nil)).build()
		errs := ValidateWorkloadCreate(w, env)
		checkErrors(t, errs)
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "spec.template.spec.runtime.sandbox.containers[0].readinessProbe") {
				t.Fatalf("error %q points outside the probe the fuzzer changed", e.Error())
			}
		}
		if len(errs) > 0 {
			return
		}
		if checks&3 == 0 || checks&3 == 3 {
			t.Fatalf("accepted a probe with %d checks", checks&3)
		}
		if portName != "" && portName != "http" || portName == "" && (portNumber < 1 || portNumber > 65535) {
			t.Fatalf("accepted the port %v", port)
		}
	})
}
