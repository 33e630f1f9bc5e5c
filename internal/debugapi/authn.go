package debugapi

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/client-go/kubernetes"
)

// The ConfigMap in which a kube-apiserver publishes its front-proxy
// (requestheader) configuration, readable through the built-in Role
// kube-system/extension-apiserver-authentication-reader.
const (
	authConfigNamespace = "kube-system"
	authConfigName      = "extension-apiserver-authentication"
)

// RequestHeaderAuthenticator returns the authenticator of requests the
// project plane's aggregator forwards: a client certificate of its
// front-proxy CA (with one of the allowed names) and the tenant in the
// X-Remote-* headers, as the plane publishes them in
// kube-system/extension-apiserver-authentication.
func RequestHeaderAuthenticator(ctx context.Context, cs kubernetes.Interface) (authenticator.Request, error) {
	cm, err := cs.CoreV1().ConfigMaps(authConfigNamespace).Get(ctx, authConfigName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to read %s/%s (is the plane's aggregation layer configured?): %w", authConfigNamespace, authConfigName, err)
	}
	return requestHeaderFromData(cm.Data)
}

// requestHeaderFromData builds the authenticator from the ConfigMap's data.
func requestHeaderFromData(data map[string]string) (authenticator.Request, error) {
	caPEM := data["requestheader-client-ca-file"]
	if caPEM == "" {
		return nil, errors.New("the project plane has no front-proxy CA (--requestheader-client-ca-file): it cannot forward to an aggregated API")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(caPEM)) {
		return nil, errors.New("the project plane's front-proxy CA is not PEM")
	}
	lists := map[string][]string{}
	for _, key := range []string{
		"requestheader-allowed-names", "requestheader-username-headers", "requestheader-uid-headers",
		"requestheader-group-headers", "requestheader-extra-headers-prefix",
	} {
		var v []string
		if raw := data[key]; raw != "" {
			if err := json.Unmarshal([]byte(raw), &v); err != nil {
				return nil, fmt.Errorf("bad %s in %s/%s: %w", key, authConfigNamespace, authConfigName, err)
			}
		}
		lists[key] = v
	}
	if len(lists["requestheader-username-headers"]) == 0 {
		return nil, errors.New("the project plane names no requestheader username header")
	}
	verify := func() (x509.VerifyOptions, bool) {
		return x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
	}
	return headerrequest.NewDynamicVerifyOptionsSecure(verify,
		headerrequest.StaticStringSlice(lists["requestheader-allowed-names"]),
		headerrequest.StaticStringSlice(lists["requestheader-username-headers"]),
		headerrequest.StaticStringSlice(lists["requestheader-uid-headers"]),
		headerrequest.StaticStringSlice(lists["requestheader-group-headers"]),
		headerrequest.StaticStringSlice(lists["requestheader-extra-headers-prefix"]),
	), nil
}
