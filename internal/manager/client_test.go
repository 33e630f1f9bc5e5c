package manager

import (
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

func TestClientRateLimits(t *testing.T) {
	tests := map[string]struct {
		args    []string
		wantErr []string
		want    ClientOptions
	}{
		"the defaults do not throttle a busy cell": {
			args: []string{"--enable-cell-controllers"},
			want: ClientOptions{QPS: DefaultKubeAPIQPS, Burst: DefaultKubeAPIBurst, FederationQPS: DefaultKubeAPIQPS, FederationBurst: DefaultKubeAPIBurst},
		},
		"the limits are set by flags, each plane's apart": {
			args: []string{"--enable-cell-controllers", "--kube-api-qps=200", "--kube-api-burst=400", "--federation-kube-api-qps=80", "--federation-kube-api-burst=160"},
			want: ClientOptions{QPS: 200, Burst: 400, FederationQPS: 80, FederationBurst: 160},
		},
		"limits that stop every request name their flags": {
			args: []string{"--enable-cell-controllers", "--kube-api-qps=0", "--kube-api-burst=0", "--federation-kube-api-qps=-1", "--federation-kube-api-burst=0"},
			wantErr: []string{
				"--kube-api-qps must be positive", "--kube-api-burst must be at least 1",
				"--federation-kube-api-qps must be positive", "--federation-kube-api-burst must be at least 1",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := parseOptions(t, tc.args)
			err := o.Validate()
			for _, want := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v does not contain %q", err, want)
				}
			}
			if len(tc.wantErr) > 0 {
				return
			}
			if err != nil {
				t.Fatalf("want no error, got %v", err)
			}
			own, federation := &rest.Config{}, &rest.Config{}
			o.Client.apply(own)
			o.Client.applyFederation(federation)
			got := ClientOptions{QPS: own.QPS, Burst: own.Burst, FederationQPS: federation.QPS, FederationBurst: federation.Burst}
			if got != tc.want {
				t.Errorf("the planes' clients get %+v, want %+v", got, tc.want)
			}
		})
	}
}
