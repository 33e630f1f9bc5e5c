package kubernetes

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// probes sets a Pod container's readiness, liveness and startup probes
// from its sandbox container's. A port name is resolved to the number of
// the container's own port of that name, so the Pod never depends on a
// name its spec might not carry; one the container does not declare is a
// configuration error.
func probes(c *computev1alpha.SandboxContainer, out *corev1.Container) error {
	var err error
	if out.ReadinessProbe, err = probe(c, c.ReadinessProbe, "readiness"); err != nil {
		return err
	}
	if out.LivenessProbe, err = probe(c, c.LivenessProbe, "liveness"); err != nil {
		return err
	}
	out.StartupProbe, err = probe(c, c.StartupProbe, "startup")
	return err
}

// probe builds one Pod probe; nil for none.
func probe(c *computev1alpha.SandboxContainer, in *computev1alpha.Probe, kind string) (*corev1.Probe, error) {
	if in == nil {
		return nil, nil
	}
	out := &corev1.Probe{
		InitialDelaySeconds: in.InitialDelaySeconds, TimeoutSeconds: in.TimeoutSeconds, PeriodSeconds: in.PeriodSeconds,
		SuccessThreshold: in.SuccessThreshold, FailureThreshold: in.FailureThreshold,
		TerminationGracePeriodSeconds: in.TerminationGracePeriodSeconds,
	}
	switch {
	case in.Exec != nil:
		out.Exec = in.Exec.DeepCopy()
	case in.HTTPGet != nil:
		port, err := probePort(c, in.HTTPGet.Port, kind)
		if err != nil {
			return nil, err
		}
		out.HTTPGet = &corev1.HTTPGetAction{Path: in.HTTPGet.Path, Port: port, Scheme: in.HTTPGet.Scheme, HTTPHeaders: in.HTTPGet.HTTPHeaders}
	case in.TCPSocket != nil:
		port, err := probePort(c, in.TCPSocket.Port, kind)
		if err != nil {
			return nil, err
		}
		out.TCPSocket = &corev1.TCPSocketAction{Port: port}
	case in.GRPC != nil:
		out.GRPC = in.GRPC.DeepCopy()
	default:
		return nil, fmt.Errorf("container %q has a %s probe with no check: set exec, httpGet, tcpSocket or grpc", c.Name, kind)
	}
	return out, nil
}

// probePort resolves a probe's port to a number of the container.
func probePort(c *computev1alpha.SandboxContainer, port intstr.IntOrString, kind string) (intstr.IntOrString, error) {
	if port.Type == intstr.Int {
		return port, nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return intstr.FromInt32(p.Port), nil
		}
	}
	return intstr.IntOrString{}, fmt.Errorf("the %s probe of container %q names port %q, which the container does not declare", kind, c.Name, port.StrVal)
}
