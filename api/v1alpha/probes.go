package v1alpha

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Probe is a health check the node runs against a sandbox container:
// Kubernetes' probe, without the fields that would reach beyond the
// instance (an HTTP or TCP check's host: the check always targets the
// container itself). Set exactly one of exec, httpGet, tcpSocket or grpc.
// Unset numbers take Kubernetes' defaults: timeoutSeconds 1,
// periodSeconds 10, successThreshold 1, failureThreshold 3.
//
// Health probes are compute's extension of Datum's API: Datum's sandbox
// containers have none.
type Probe struct {
	// Exec runs a command in the container; exit 0 is healthy.
	//
	// +optional
	Exec *corev1.ExecAction `json:"exec,omitempty"`

	// HTTPGet sends a GET to the container; a status in 200–399 is
	// healthy.
	//
	// +optional
	HTTPGet *HTTPGetProbe `json:"httpGet,omitempty"`

	// TCPSocket opens a connection to the container; a connection is
	// healthy.
	//
	// +optional
	TCPSocket *TCPSocketProbe `json:"tcpSocket,omitempty"`

	// GRPC calls the gRPC health checking protocol of the container.
	//
	// +optional
	GRPC *corev1.GRPCAction `json:"grpc,omitempty"`

	// InitialDelaySeconds after the container starts before the first
	// check.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`

	// TimeoutSeconds a check may take.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// PeriodSeconds between checks.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`

	// SuccessThreshold is how many checks in a row must pass after a
	// failure; must be 1 for liveness and startup probes.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	SuccessThreshold int32 `json:"successThreshold,omitempty"`

	// FailureThreshold is how many checks in a row must fail: a liveness
	// or startup probe then restarts the container, a readiness probe
	// takes the instance out of service.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	FailureThreshold int32 `json:"failureThreshold,omitempty"`

	// TerminationGracePeriodSeconds the container gets to stop after a
	// liveness or startup failure (not allowed on a readiness probe).
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
}

// HTTPGetProbe is an HTTP GET to the container.
type HTTPGetProbe struct {
	// Path of the request; "/" when unset.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Path string `json:"path,omitempty"`

	// Port of the container: a number or the name of one of its ports.
	//
	// +required
	Port intstr.IntOrString `json:"port"`

	// Scheme is HTTP (default) or HTTPS (the certificate is not
	// verified).
	//
	// +optional
	// +kubebuilder:validation:Enum=HTTP;HTTPS
	Scheme corev1.URIScheme `json:"scheme,omitempty"`

	// HTTPHeaders to send.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	HTTPHeaders []corev1.HTTPHeader `json:"httpHeaders,omitempty"`
}

// TCPSocketProbe opens a TCP connection to the container.
type TCPSocketProbe struct {
	// Port of the container: a number or the name of one of its ports.
	//
	// +required
	Port intstr.IntOrString `json:"port"`
}
