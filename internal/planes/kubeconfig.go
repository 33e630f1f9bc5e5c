package planes

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Client rate limits: client-go's defaults (5 QPS) throttle tests and
// benchmarks against a local apiserver that can take far more.
const (
	clientQPS   = 100
	clientBurst = 200
)

// restConfig returns a client configuration authenticating with a client
// certificate.
func restConfig(url string, caPEM []byte, id *keyPair) *rest.Config {
	return &rest.Config{
		Host: url,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   caPEM,
			CertData: id.certPEM,
			KeyData:  id.keyPEM,
		},
		QPS:   clientQPS,
		Burst: clientBurst,
	}
}

// kubeconfig renders a self-contained kubeconfig (certificates embedded)
// whose cluster and context are named after the plane.
func kubeconfig(plane, user, url string, caPEM []byte, id *keyPair) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[plane] = &clientcmdapi.Cluster{
		Server:                   url,
		CertificateAuthorityData: caPEM,
	}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: id.certPEM,
		ClientKeyData:         id.keyPEM,
	}
	cfg.Contexts[plane] = &clientcmdapi.Context{Cluster: plane, AuthInfo: user}
	cfg.CurrentContext = plane
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to render kubeconfig for plane %s: %w", plane, err)
	}
	return data, nil
}
