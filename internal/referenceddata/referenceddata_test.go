package referenceddata

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMissingNamesTheCompanionsAbsentWhateverTheirHash(t *testing.T) {
	e := Expected{Resolved: true, Tokens: []string{"ConfigMap/app", "Secret/db", "Secret/tls"},
		Hashes: map[string]string{"ConfigMap/app": "h1", "Secret/db": "h2", "Secret/tls": "h3"}}
	tests := map[string]struct {
		present map[string]string
		want    []string
	}{
		"nothing present: all are missing, in token order": {want: []string{"ConfigMap/app", "Secret/db", "Secret/tls"}},
		"a companion at another hash is not missing":       {present: map[string]string{"configmap.app": "old", "secret.db": "h2", "secret.tls": ""}},
		"a ConfigMap named like a Secret's companion does not count for it": {
			present: map[string]string{"configmap.db": "h2", "configmap.app": "h1", "secret.tls": "h3"}, want: []string{"Secret/db"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Missing(e, tc.present)); diff != "" {
				t.Errorf("Missing (-want +got):\n%s", diff)
			}
		})
	}
}
