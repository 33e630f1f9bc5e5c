package quotaserver

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("compute-quota", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(fs); err != nil {
		return o, err
	}
	return o, o.Validate()
}

func TestOptions(t *testing.T) {
	tests := map[string]struct {
		args    []string
		wantErr []string
	}{
		"a project with its default grant is valid": {
			args: []string{"--project", "p1", "--default-instances", "20", "--default-memory", "16Gi"},
		},
		"no project and no grant flags is valid (no default grant)": {},
		"grant flags without a project are refused, each by name": {
			args:    []string{"--default-instances", "20", "--default-vcpus", "8"},
			wantErr: []string{"--default-instances shapes the project's default grant", "--default-vcpus shapes", "set --project"},
		},
		"lease flags without leader election are refused": {
			args:    []string{"--project", "p1", "--leader-election-id", "x"},
			wantErr: []string{"--leader-election-id has no effect without --leader-elect"},
		},
		"lease flags with leader election are valid": {
			args: []string{"--project", "p1", "--leader-elect", "--leader-election-id", "x"},
		},
		"a bad quantity names its flags": {
			args:    []string{"--project", "p1", "--default-memory", "lots"},
			wantErr: []string{"--default-memory"},
		},
		"the per-cell claim cap is a flag": {
			args: []string{"--max-claims-per-source", "3"},
		},
		"a per-cell claim cap of 0 would refuse every cell and is refused": {
			args:    []string{"--max-claims-per-source", "0"},
			wantErr: []string{"--max-claims-per-source must be at least 1"},
		},
		"a negative per-cell claim cap is refused": {
			args:    []string{"--max-claims-per-source", "-2"},
			wantErr: []string{"--max-claims-per-source) must be positive, got -2"},
		},
		"client limits must be positive": {
			args:    []string{"--kube-api-qps", "0"},
			wantErr: []string{"--kube-api-qps"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := parse(t, tc.args...)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if o.LeaderElectionNamespace != o.Service.BucketNamespace && !o.changed["leader-election-namespace"] {
					t.Errorf("the lease namespace defaults to %q, want the bucket namespace %q", o.LeaderElectionNamespace, o.Service.BucketNamespace)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one mentioning %q", tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestADefaultGrantIsMadeOnlyForAProject(t *testing.T) {
	o, err := parse(t, "--project", "p1")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Service.DefaultGrant) == 0 {
		t.Errorf("a project gets no default grant")
	}
	o, err = parse(t)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Service.DefaultGrant) != 0 {
		t.Errorf("no project, yet a default grant %v", o.Service.DefaultGrant)
	}
}
