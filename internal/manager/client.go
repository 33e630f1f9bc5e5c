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

// ClientOptions are the client-side rate limits of the manager's clients of
// the plane it runs in.
type ClientOptions struct {
	// QPS is the sustained rate of requests.
	QPS float32
	// Burst is the number of requests that may go at once.
	Burst int
}

// NewClientOptions returns the defaults.
func NewClientOptions() ClientOptions {
	return ClientOptions{QPS: DefaultKubeAPIQPS, Burst: DefaultKubeAPIBurst}
}

// AddFlags binds the client options to a flag set.
func (c *ClientOptions) AddFlags(fs *pflag.FlagSet) {
	fs.Float32Var(&c.QPS, "kube-api-qps", c.QPS, "Requests per second to the plane this manager runs in.")
	fs.IntVar(&c.Burst, "kube-api-burst", c.Burst, "Burst of requests to the plane this manager runs in.")
}

// Validate reports every problem at once, each naming its flag.
func (c *ClientOptions) Validate() error {
	var errs []error
	if c.QPS <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps must be positive, got %v", c.QPS))
	}
	if c.Burst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-burst must be at least 1, got %d", c.Burst))
	}
	return errors.Join(errs...)
}

// apply sets the rate limits on cfg.
func (c *ClientOptions) apply(cfg *rest.Config) {
	cfg.QPS, cfg.Burst = c.QPS, c.Burst
}
