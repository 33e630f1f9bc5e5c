package features

import "testing"

func TestFeatureGates(t *testing.T) {
	tests := map[string]struct {
		env     string
		flagSet bool
		want    bool
		wantErr bool
	}{
		"the gate is off by default":                   {want: false},
		"FEATURE_GATES turns it on":                    {env: "NetworkingIntegration=true", want: true},
		"the flag wins over FEATURE_GATES":             {env: "NetworkingIntegration=true", flagSet: true, want: false},
		"an unknown gate in FEATURE_GATES is an error": {env: "Nope=true", wantErr: true},
		"a malformed FEATURE_GATES value is an error":  {env: "NetworkingIntegration", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Setenv(EnvFeatureGates, tc.env)
			g := New()
			err := ApplyEnv(g, tc.flagSet)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ApplyEnv() error = %v, wantErr %v", err, tc.wantErr)
			}
			if err == nil && g.Enabled(NetworkingIntegration) != tc.want {
				t.Fatalf("NetworkingIntegration = %v, want %v", g.Enabled(NetworkingIntegration), tc.want)
			}
		})
	}
}
