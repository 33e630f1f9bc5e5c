package quota

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/clitest"
	"github.com/citycells/compute/internal/cli/cmdutil"
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
		City: city,
	}
}

func TestQuotaView(t *testing.T) {
	for name, in := range map[string]Input{
		"at-limit":        input(""),
		"one-city":        input("LHR"),
		"no-quota-system": {Target: cmdutil.Target{Context: "compute-local"}, Instances: input("").Instances, LimitsUnavailable: "this project has no quota system: usage is shown without limits"},
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

func TestSizeFollowsTheCellsOrder(t *testing.T) {
	base := func() *computev1alpha.InstanceSpec {
		return clitest.NewWorkload("web").Build().Spec.Template.Spec.DeepCopy()
	}
	for name, tc := range map[string]struct {
		spec             func() *computev1alpha.InstanceSpec
		wantCPU, wantMem int64
	}{
		"the instance type sizes a plain instance": {base, 1000, 2048},
		"container limits win": {func() *computev1alpha.InstanceSpec {
			s := base()
			s.Runtime.Sandbox.Containers[0].Resources = &computev1alpha.ContainerResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}
			return s
		}, 500, 256},
		"instance requests come next": {func() *computev1alpha.InstanceSpec {
			s := base()
			s.Runtime.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
			return s
		}, 2000, 2048},
		"a bigger type is bigger": {func() *computev1alpha.InstanceSpec {
			s := base()
			s.Runtime.Resources.InstanceType = "datumcloud/d1-standard-8"
			return s
		}, 4000, 8192},
	} {
		t.Run(name, func(t *testing.T) {
			cpu, mem := Size(tc.spec())
			if cpu != tc.wantCPU || mem != tc.wantMem {
				t.Errorf("Size = %d m, %d MiB; want %d m, %d MiB", cpu, mem, tc.wantCPU, tc.wantMem)
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
