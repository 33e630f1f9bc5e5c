package quotausage

import (
	"fmt"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/apitest"
	"github.com/citycells/compute/internal/cli/cmdutil"
	cellquota "github.com/citycells/compute/internal/quota"
	"github.com/citycells/compute/test/clitest"
)

// cmd renders command lines as datumctl does.
func cmd(format string, args ...any) string {
	return "datumctl compute " + fmt.Sprintf(format, args...)
}

// bucket is the project's allowance for one resource type.
func bucket(typ string, limit, allocated int64) quotav1alpha1.AllowanceBucket {
	b := quotav1alpha1.AllowanceBucket{}
	b.Name = "p1-" + typ
	b.Spec.ConsumerRef = quotav1alpha1.ConsumerRef{Kind: "Project", Name: "p1"}
	b.Spec.ResourceType = typ
	b.Status.Limit, b.Status.Allocated, b.Status.Available = limit, allocated, limit-allocated
	return b
}

// (A printer test: it renders objects built in memory, in the states the
// controllers write; no controller runs. The command tests in
// internal/cli run on the live plane, with the real controllers.)
// input is a project at its instance limit with one instance blocked in
// LHR.
func input(city string) Input {
	w := clitest.NewWorkload("web").Placement("default", 3, "DFW", "LHR").Build()
	_, insts := clitest.InMemory(w, clitest.World{"LHR": {clitest.Available, clitest.Available, clitest.QuotaExceeded}})
	return Input{
		Target:    cmdutil.Target{Project: "p1"},
		Instances: insts,
		Buckets: []quotav1alpha1.AllowanceBucket{
			bucket(computev1alpha.ResourceTypeInstances, 5, 5),
			bucket(computev1alpha.ResourceTypeVCPUs, 8000, 5000),
			bucket(computev1alpha.ResourceTypeMemory, 16384, 10240),
		},
		City:          city,
		InstanceTypes: apitest.StandardInstanceTypes(),
	}
}

func TestQuotaView(t *testing.T) {
	for name, in := range map[string]Input{
		"at-limit":        input(""),
		"one-city":        input("LHR"),
		"no-quota-system": {Target: cmdutil.Target{Context: "compute-local"}, Instances: input("").Instances, InstanceTypes: apitest.StandardInstanceTypes(), LimitsUnavailable: "this project has no quota system: usage is shown without limits"},
	} {
		v := Build(in)
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := v.Render(&b, true, 120, cmd); err != nil {
				t.Fatal(err)
			}
			clitest.Golden(t, "quota-"+name, b.String())
		})
		t.Run(name+"/json", func(t *testing.T) {
			var b strings.Builder
			if err := cmdutil.PrintView(&b, cmdutil.OutputJSON, v); err != nil {
				t.Fatal(err)
			}
			clitest.Golden(t, "quota-"+name+"-json", b.String())
		})
	}
}

// TestTheViewAddsUpWhatTheCellClaims feeds the same templates to the
// quota view and to the cell's sizing (quota.SizeOf): each city's usage
// must be the sum of the cell's claims, including the templates an
// earlier CLI-only rule sized differently (partial container limits,
// memory that is not a whole MiB).
func TestTheViewAddsUpWhatTheCellClaims(t *testing.T) {
	limits := func(cpu, mem string) *computev1alpha.ContainerResourceRequirements {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return &computev1alpha.ContainerResourceRequirements{Limits: l}
	}
	sidecar := func(s *computev1alpha.InstanceSpec, r *computev1alpha.ContainerResourceRequirements) {
		s.Runtime.Sandbox.Containers = append(s.Runtime.Sandbox.Containers,
			computev1alpha.SandboxContainer{Name: "sidecar", Image: "ghcr.io/acme/sidecar:1", Resources: r})
	}
	for name, change := range map[string]func(*computev1alpha.InstanceSpec){
		"a plain instance type":  func(*computev1alpha.InstanceSpec) {},
		"a bigger instance type": func(s *computev1alpha.InstanceSpec) { s.Runtime.Resources.InstanceType = "datumcloud/d1-standard-8" },
		"every container has limits": func(s *computev1alpha.InstanceSpec) {
			s.Runtime.Sandbox.Containers[0].Resources = limits("500m", "256Mi")
			sidecar(s, limits("250m", "128Mi"))
		},
		"one container lacks limits": func(s *computev1alpha.InstanceSpec) { sidecar(s, limits("250m", "128Mi")) },
		"memory that is not a whole MiB": func(s *computev1alpha.InstanceSpec) {
			s.Runtime.Sandbox.Containers[0].Resources = limits("0.0001", "1000000")
		},
		"instance requests": func(s *computev1alpha.InstanceSpec) {
			s.Runtime.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1.5Gi")}
		},
		"cpu from limits, memory from requests": func(s *computev1alpha.InstanceSpec) {
			s.Runtime.Sandbox.Containers[0].Resources = limits("750m", "")
			s.Runtime.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("3Gi")}
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := clitest.NewWorkload("web").Placement("default", 2, "DFW", "LHR").Build()
			change(&w.Spec.Template.Spec)
			_, insts := clitest.InMemory(w, nil)
			want := map[string]CityUsage{}
			for i := range insts {
				size, err := cellquota.SizeOf(&insts[i], apitest.StandardInstanceTypes())
				if err != nil {
					t.Fatal(err)
				}
				code := insts[i].Labels[computev1alpha.CityCodeLabel]
				cu := want[code]
				cu.City = code
				cu.Instances++
				cu.MilliCPU += size.MilliCPU
				cu.MemoryMiB += size.MemoryMiB
				want[code] = cu
			}
			v := Build(Input{Target: cmdutil.Target{Project: "p1"}, Instances: insts, InstanceTypes: apitest.StandardInstanceTypes()})
			got := map[string]CityUsage{}
			for _, cu := range v.Cities {
				got[cu.City] = cu
			}
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("the view disagrees with the cell's claims (-cell +view):\n%s", diff)
			}
		})
	}
}

func TestAmount(t *testing.T) {
	for _, tc := range []struct {
		resource string
		n        int64
		want     string
	}{
		{ResourceVCPU, 3000, "3"}, {ResourceVCPU, 2500, "2.5"}, {ResourceVCPU, 250, "0.25"},
		{ResourceMemory, 2048, "2 GiB"}, {ResourceMemory, 1536, "1.5 GiB"}, {ResourceMemory, 512, "512 MiB"},
		{ResourceInstances, 7, "7"},
	} {
		if got := Amount(tc.resource, tc.n); got != tc.want {
			t.Errorf("Amount(%s, %d) = %q, want %q", tc.resource, tc.n, got, tc.want)
		}
	}
}

func TestQuotaFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args     []string
		wantCode int
	}{
		"no flags":                  {nil, cmdutil.ExitOK},
		"a city":                    {[]string{"--city", "lhr"}, cmdutil.ExitOK},
		"a city that is not a code": {[]string{"--city", "London"}, cmdutil.ExitUsage},
		"arguments are usage":       {[]string{"LHR"}, cmdutil.ExitUsage},
	} {
		t.Run(name, func(t *testing.T) {
			c, o := newCommand(&cmdutil.Factory{})
			if got := cmdutil.ExitCode(cmdutil.Parse(c, o, tc.args)); got != tc.wantCode {
				t.Errorf("exit code %d, want %d", got, tc.wantCode)
			}
		})
	}
}
