package cli_test

import (
	"context"
	"slices"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
	"github.com/citycells/compute/test/integration/fixtures/clilive"
)

func TestSuspendStopsEveryInstanceAndResumeBringsTheSameOnesBack(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.WaitRolledOut("web")
	ctx := context.Background()
	instances := func() (names []string, suspended int) {
		var list computev1alpha.InstanceList
		if err := h.Client.List(ctx, &list, client.InNamespace(h.Namespace)); err != nil {
			t.Fatal(err)
		}
		for _, i := range list.Items {
			names = append(names, i.Name)
			if i.Status.Suspended {
				suspended++
			}
		}
		slices.Sort(names)
		return names, suspended
	}
	before, _ := instances()

	dry := h.Run(main, clitest.RunOptions{}, "suspend", "web", "--dry-run", "-o", "jsonpath={.metadata.annotations}")
	if dry.Code != cmdutil.ExitOK {
		t.Fatalf("dry run: exit %d: %s", dry.Code, dry.Stderr)
	}
	mustContain(t, "dry run", dry.Stdout, `"compute.datumapis.com/suspended":"true"`)
	var w computev1alpha.Workload
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w); err != nil {
		t.Fatal(err)
	}
	if computev1alpha.IsSuspended(w.Annotations) {
		t.Fatal("a dry run suspended the workload")
	}

	res := h.Run(main, clitest.RunOptions{}, "suspend", "web", "--wait", "--timeout", "60s")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("suspend: exit %d:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	mustContain(t, "suspend", res.Stdout, "Suspending web in DFW, LHR: its instances stop; nothing is deleted.")
	mustContain(t, "suspend", res.Stdout, "Suspended web: DFW 0/2 suspended · LHR 0/2 suspended")
	names, suspended := instances()
	if !slices.Equal(names, before) || suspended != len(before) {
		t.Errorf("suspended instances %v (%d report suspended), want the same %v, all suspended", names, suspended, before)
	}
	status := h.Run(main, clitest.RunOptions{}, "status", "web")
	mustContain(t, "status", status.Stdout, "Suspended")

	again := h.Run(main, clitest.RunOptions{}, "suspend", "web")
	mustContain(t, "suspend again", again.Stdout, "Nothing to do: web is already suspended.")

	res = h.Run(main, clitest.RunOptions{}, "resume", "web", "--wait", "--timeout", "60s")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("resume: exit %d:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	mustContain(t, "resume", res.Stdout, "Resumed web: DFW 2/2 ready · LHR 2/2 ready")
	if names, suspended := instances(); !slices.Equal(names, before) || suspended != 0 {
		t.Errorf("resumed instances %v (%d still suspended), want the same %v", names, suspended, before)
	}
}
