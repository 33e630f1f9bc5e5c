package planes

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"k8s.io/client-go/rest"
)

// adminUser is the admin identity's user name; system:masters bypasses RBAC.
const (
	adminUser  = "admin"
	adminGroup = "system:masters"
)

// Plane is one running kube-apiserver of an Environment.
type Plane struct {
	env  *Environment
	spec PlaneSpec
	name string
	dir  string

	admin *keyPair

	// Set by bind once the port is known.
	port           int
	url            string
	config         *rest.Config
	kubeconfig     []byte
	kubeconfigPath string
}

// newPlane generates the plane's certificates and keys into
// <dir>/planes/<name>.
func newPlane(e *Environment, spec PlaneSpec) (*Plane, error) {
	p := &Plane{
		env:            e,
		spec:           spec,
		name:           spec.Name,
		dir:            filepath.Join(e.dir, "planes", spec.Name),
		kubeconfigPath: filepath.Join(e.dir, spec.Name+".kubeconfig"),
	}
	serving, err := e.pki.ca.serving("kube-apiserver-"+spec.Name, spec.SANs...)
	if err != nil {
		return nil, err
	}
	if p.admin, err = e.pki.ca.client(adminUser, adminGroup); err != nil {
		return nil, err
	}
	sa, err := newSigningKey()
	if err != nil {
		return nil, err
	}
	if err := writeFiles(p.dir, map[string][]byte{
		"serving.crt": serving.certPEM,
		"serving.key": serving.keyPEM,
		"sa.key":      sa.keyPEM,
		"sa.pub":      sa.publicPEM,
	}); err != nil {
		return nil, fmt.Errorf("plane %s: %w", spec.Name, err)
	}
	return p, nil
}

// bind sets the port and everything derived from it.
func (p *Plane) bind(port int) error {
	p.port = port
	p.url = "https://127.0.0.1:" + strconv.Itoa(port)
	p.config = restConfig(p.url, p.env.pki.ca.certPEM, p.admin)
	data, err := kubeconfig(p.name, adminUser, p.url, p.env.pki.ca.certPEM, p.admin)
	if err != nil {
		return err
	}
	p.kubeconfig = data
	return nil
}

// writeKubeconfig writes the admin kubeconfig to <dir>/<name>.kubeconfig.
func (p *Plane) writeKubeconfig() error {
	if err := os.WriteFile(p.kubeconfigPath, p.kubeconfig, 0o600); err != nil {
		return fmt.Errorf("failed to write kubeconfig of plane %s: %w", p.name, err)
	}
	return nil
}

// Name returns the plane's name.
func (p *Plane) Name() string {
	return p.name
}

// URL returns the apiserver's base URL, https://127.0.0.1:<port>.
func (p *Plane) URL() string {
	return p.url
}

// Port returns the apiserver's secure port.
func (p *Plane) Port() int {
	return p.port
}

// CAPEM returns the PEM certificate of the CA that signed the apiserver's
// serving certificate: the caBundle to register the plane elsewhere (as a
// Karmada member cluster, for instance).
func (p *Plane) CAPEM() []byte {
	return slices.Clone(p.env.pki.ca.certPEM)
}

// Config returns a new admin (system:masters) client configuration.
func (p *Plane) Config() *rest.Config {
	return rest.CopyConfig(p.config)
}

// KubeconfigPath returns the path of the admin kubeconfig,
// <dir>/<name>.kubeconfig, whose cluster and context are named after the
// plane.
func (p *Plane) KubeconfigPath() string {
	return p.kubeconfigPath
}

// KubeconfigBytes returns the admin kubeconfig (certificates embedded).
func (p *Plane) KubeconfigBytes() []byte {
	return slices.Clone(p.kubeconfig)
}

// ClientConfig mints a client certificate for user in groups, signed by the
// environment CA, and returns a configuration authenticating with it. The
// identity has no permissions beyond what RBAC grants user or groups
// (system:authenticated is implied).
func (p *Plane) ClientConfig(user string, groups ...string) (*rest.Config, error) {
	id, err := p.env.pki.ca.client(user, groups...)
	if err != nil {
		return nil, err
	}
	return restConfig(p.url, p.env.pki.ca.certPEM, id), nil
}

// ClientKubeconfig is ClientConfig rendered as a self-contained kubeconfig,
// for components that take a kubeconfig file.
func (p *Plane) ClientKubeconfig(user string, groups ...string) ([]byte, error) {
	id, err := p.env.pki.ca.client(user, groups...)
	if err != nil {
		return nil, err
	}
	return kubeconfig(p.name, user, p.url, p.env.pki.ca.certPEM, id)
}
