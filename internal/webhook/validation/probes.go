package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// MaxProbeSeconds bounds a probe's delays, timeouts and periods.
const MaxProbeSeconds = 3600

// probeKind says which probe a Probe is: the rules differ.
type probeKind int

const (
	readinessProbe probeKind = iota
	livenessProbe
	startupProbe
)

// validateProbes validates a container's readiness, liveness and startup
// probes against its ports.
func validateProbes(c *computev1alpha.SandboxContainer, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, pr := range []struct {
		probe *computev1alpha.Probe
		kind  probeKind
		name  string
	}{{c.ReadinessProbe, readinessProbe, "readinessProbe"}, {c.LivenessProbe, livenessProbe, "livenessProbe"}, {c.StartupProbe, startupProbe, "startupProbe"}} {
		if pr.probe != nil {
			errs = append(errs, validateProbe(pr.probe, pr.kind, c.Ports, p.Child(pr.name))...)
		}
	}
	return errs
}

// validateProbe validates one probe: exactly one check, ports of the
// container, numbers in range.
func validateProbe(pr *computev1alpha.Probe, kind probeKind, ports []computev1alpha.NamedPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	set := 0
	if pr.Exec != nil {
		set++
		if len(pr.Exec.Command) == 0 {
			errs = append(errs, field.Required(p.Child("exec", "command"), "name the command to run, e.g. [cat, /tmp/healthy]"))
		}
	}
	if g := pr.HTTPGet; g != nil {
		set++
		errs = append(errs, validateHTTPGetProbe(g, ports, p.Child("httpGet"))...)
	}
	if t := pr.TCPSocket; t != nil {
		set++
		errs = append(errs, validateProbePort(t.Port, ports, p.Child("tcpSocket", "port"))...)
	}
	if g := pr.GRPC; g != nil {
		set++
		if g.Port < 1 || g.Port > 65535 {
			errs = append(errs, field.Invalid(p.Child("grpc", "port"), g.Port, "must be between 1 and 65535"))
		}
	}
	if set != 1 {
		errs = append(errs, field.Invalid(p, set, "set exactly one of exec, httpGet, tcpSocket or grpc"))
	}
	return append(errs, validateProbeNumbers(pr, kind, p)...)
}

// validateHTTPGetProbe validates an HTTP check.
func validateHTTPGetProbe(g *computev1alpha.HTTPGetProbe, ports []computev1alpha.NamedPort, p *field.Path) field.ErrorList {
	errs := validateProbePort(g.Port, ports, p.Child("port"))
	if g.Path != "" && !strings.HasPrefix(g.Path, "/") {
		errs = append(errs, field.Invalid(p.Child("path"), g.Path, "must start with /"))
	}
	if g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP && g.Scheme != corev1.URISchemeHTTPS {
		errs = append(errs, field.NotSupported(p.Child("scheme"), g.Scheme, []string{string(corev1.URISchemeHTTP), string(corev1.URISchemeHTTPS)}))
	}
	for i, h := range g.HTTPHeaders {
		for _, msg := range utilvalidation.IsHTTPHeaderName(h.Name) {
			errs = append(errs, field.Invalid(p.Child("httpHeaders").Index(i).Child("name"), h.Name, msg))
		}
	}
	return errs
}

// validateProbePort checks that a probe's port is a number or the name of
// one of the container's TCP ports (the node resolves names against the
// container's own ports only).
func validateProbePort(port intstr.IntOrString, ports []computev1alpha.NamedPort, p *field.Path) field.ErrorList {
	if port.Type == intstr.Int {
		if port.IntVal < 1 || port.IntVal > 65535 {
			return field.ErrorList{field.Invalid(p, port.IntVal, "must be between 1 and 65535")}
		}
		return nil
	}
	names := make([]string, 0, len(ports))
	for _, cp := range ports {
		if cp.Protocol == "" || cp.Protocol == corev1.ProtocolTCP {
			if cp.Name == port.StrVal {
				return nil
			}
			names = append(names, cp.Name)
		}
	}
	if len(names) == 0 {
		return field.ErrorList{field.Invalid(p, port.StrVal, "the container declares no TCP port of that name: give a port number, or declare the port under ports")}
	}
	return field.ErrorList{field.NotSupported(p, port.StrVal, names)}
}

// validateProbeNumbers checks a probe's delays, thresholds and grace.
func validateProbeNumbers(pr *computev1alpha.Probe, kind probeKind, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, n := range []struct {
		name  string
		value int32
		max   int32
	}{
		{"initialDelaySeconds", pr.InitialDelaySeconds, MaxProbeSeconds}, {"timeoutSeconds", pr.TimeoutSeconds, MaxProbeSeconds},
		{"periodSeconds", pr.PeriodSeconds, MaxProbeSeconds}, {"successThreshold", pr.SuccessThreshold, 100},
		{"failureThreshold", pr.FailureThreshold, 100},
	} {
		if n.value < 0 || n.value > n.max {
			errs = append(errs, field.Invalid(p.Child(n.name), n.value, fmt.Sprintf("must be between 0 (the default) and %d", n.max)))
		}
	}
	if kind != readinessProbe && pr.SuccessThreshold > 1 {
		errs = append(errs, field.Invalid(p.Child("successThreshold"), pr.SuccessThreshold, "must be 1 for a liveness or startup probe"))
	}
	if g := pr.TerminationGracePeriodSeconds; g != nil {
		switch {
		case kind == readinessProbe:
			errs = append(errs, field.Forbidden(p.Child("terminationGracePeriodSeconds"), "only a liveness or startup probe stops the container"))
		case *g < 1 || *g > MaxProbeSeconds:
			errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, fmt.Sprintf("must be between 1 and %d", MaxProbeSeconds)))
		}
	}
	return errs
}
