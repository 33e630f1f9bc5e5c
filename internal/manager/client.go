package manager

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
)

// Defaults of ClientOptions. client-go's own (5 QPS, burst 10) throttle a
// cell that keeps a few dozen Instances waiting for quota: each is looked
// at every second in its first minute, and every grant costs a status write
// and a gate patch.
const (
	DefaultKubeAPIQPS   = 50
	DefaultKubeAPIBurst = 100
)

// ClientOptions are the client-side rate limits of the manager's clients:
// of the plane it runs in, and of the federation plane. Each plane's client
// has its own limiter. Left unset, the federation plane's client would get
// client-go's 5 QPS: the federator's copies, and every cell's write-back of
// its Instances, would queue behind it.
type ClientOptions struct {
	// QPS is the sustained rate of requests to the manager's own plane.
	QPS float32
	// Burst is the number of requests that may go at once to it.
	Burst int
	// FederationQPS and FederationBurst are the same for the federation
	// plane.
	FederationQPS   float32
	FederationBurst int
}

// NewClientOptions returns the defaults.
func NewClientOptions() ClientOptions {
	return ClientOptions{
		QPS: DefaultKubeAPIQPS, Burst: DefaultKubeAPIBurst,
		FederationQPS: DefaultKubeAPIQPS, FederationBurst: DefaultKubeAPIBurst,
	}
}

// AddFlags binds the client options to a flag set.
func (c *ClientOptions) AddFlags(fs *pflag.FlagSet) {
	fs.Float32Var(&c.QPS, "kube-api-qps", c.QPS, "Requests per second to the plane this manager runs in (and, in the cell role, to the projects' quota planes).")
	fs.IntVar(&c.Burst, "kube-api-burst", c.Burst, "Burst of requests to the plane this manager runs in (and, in the cell role, to the projects' quota planes).")
	fs.Float32Var(&c.FederationQPS, "federation-kube-api-qps", c.FederationQPS, "Requests per second to the federation plane (--federation-kubeconfig).")
	fs.IntVar(&c.FederationBurst, "federation-kube-api-burst", c.FederationBurst, "Burst of requests to the federation plane.")
}

// Validate reports every problem at once, each naming its flag.
func (c *ClientOptions) Validate() error {
	var errs []error
	for _, l := range []struct {
		flag  string
		qps   float32
		burst int
	}{{"kube-api", c.QPS, c.Burst}, {"federation-kube-api", c.FederationQPS, c.FederationBurst}} {
		if l.qps <= 0 {
			errs = append(errs, fmt.Errorf("--%s-qps must be positive, got %v", l.flag, l.qps))
		}
		if l.burst < 1 {
			errs = append(errs, fmt.Errorf("--%s-burst must be at least 1, got %d", l.flag, l.burst))
		}
	}
	return errors.Join(errs...)
}

// apply sets the rate limits of the manager's own plane on cfg.
func (c *ClientOptions) apply(cfg *rest.Config) {
	cfg.QPS, cfg.Burst = c.QPS, c.Burst
}

// applyFederation sets the federation plane's rate limits on cfg.
func (c *ClientOptions) applyFederation(cfg *rest.Config) {
	cfg.QPS, cfg.Burst = c.FederationQPS, c.FederationBurst
}
