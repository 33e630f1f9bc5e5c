package management

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/citycells/compute/internal/projects"
)

func TestOptionsFlags(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	err := fs.Parse([]string{
		"--project-discovery=kubeconfig", "--project-kubeconfig-namespace=projects",
		"--webhook-port=9444", "--webhook-cert-dir=/certs", "--projection-writers=a,b",
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.Projects.Mode != projects.ModeKubeconfig || o.Projects.SecretNamespace != "projects" ||
		o.Webhook.Port != 9444 || o.Webhook.CertDir != "/certs" || len(o.Webhook.ProjectionWriters) != 2 {
		t.Fatalf("flags not bound: %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
}

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		change  func(*Options)
		wantErr []string
	}{
		"the defaults are valid": {change: func(*Options) {}},
		"webhooks need a certificate directory": {
			change:  func(o *Options) { o.Webhook.CertDir = "" },
			wantErr: []string{"--webhook-cert-dir"},
		},
		"webhooks need a port": {
			change:  func(o *Options) { o.Webhook.Port = 0 },
			wantErr: []string{"--webhook-port"},
		},
		"disabled webhooks need neither": {
			change: func(o *Options) { o.Webhook = WebhookOptions{Disabled: true} },
		},
		"every error is reported at once": {
			change:  func(o *Options) { o.Webhook.CertDir, o.Projects.Mode = "", "bogus" },
			wantErr: []string{"--webhook-cert-dir", "--project-discovery"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			tc.change(&o)
			err := o.Validate()
			if len(tc.wantErr) == 0 && err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
			for _, want := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("Validate() = %v, want an error naming %s", err, want)
				}
			}
		})
	}
}
