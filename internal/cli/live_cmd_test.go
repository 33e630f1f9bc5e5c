package cli_test

// The tests of this file, like every command test that needs a status,
// run against the real controllers (the live plane,
// clilive.StartControllers): the Workload, WorkloadDeployment and Instance
// controllers, the cell's quota client with compute-quota's quota service,
// and the simulated runtime provider. Every status a command shows there
// was written by them. A rollout in progress is an instance the provider
// holds (clilive.Held, clilive.Harness.Release). The states the
// controllers cannot hold on demand — an instance waiting for quota (the
// quota service answers a claim at once), a workload the management plane
// has not reported yet — are left to the printer tests of the noun
// packages, which render objects built in memory (clitest.InMemory).

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
	"github.com/citycells/compute/test/integration/fixtures/clilive"
)

// growIntoLHR rolls workload web out in DFW, then adds LHR to its
// placement, so that when the project's quota runs out it is LHR's last
// instances the quota service denies (claims are granted in the order they
// come).
func growIntoLHR(t *testing.T, h *clilive.Harness, replicas int32) {
	t.Helper()
	h.CreateWorkload(clitest.NewWorkload("web").Placement("default", replicas, "DFW").Build())
	h.WaitRolledOut("web")
	ctx := context.Background()
	var w computev1alpha.Workload
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(w.DeepCopy())
	w.Spec.Placements[0].CityCodes = []string{"DFW", "LHR"}
	if err := h.Client.Patch(ctx, &w, patch); err != nil {
		t.Fatal(err)
	}
}

// waitQuotaExceeded waits until n instances of web in LHR report that the
// quota service denied them, and the workload's status has seen it.
func waitQuotaExceeded(h *clilive.Harness, n int) {
	h.T.Helper()
	h.Eventually(fmt.Sprintf("%d LHR instances denied quota", n), func(ctx context.Context) error {
		byCity, err := h.Instances(ctx, "web")
		if err != nil {
			return err
		}
		denied := 0
		for _, inst := range byCity["LHR"] {
			for _, c := range inst.Status.Conditions {
				if c.Type == computev1alpha.ConditionQuotaGranted && c.Reason == computev1alpha.ReasonQuotaExceeded {
					denied++
				}
			}
		}
		if denied != n {
			return fmt.Errorf("%d denied", denied)
		}
		var w computev1alpha.Workload
		if err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w); err != nil {
			return err
		}
		if w.Status.ObservedGeneration != w.Generation || w.Status.DesiredReplicas != 4 {
			return fmt.Errorf("workload status %+v", w.Status.ReplicaCounts)
		}
		return nil
	})
}

func TestStatusShowsWhatBlocksAWorkloadAndWhatToDo(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Grant{Instances: 3, VCPUs: "400", Memory: "800Gi"})
	growIntoLHR(t, h, 2)
	waitQuotaExceeded(h, 1)

	var res clitest.Result
	h.Eventually("status shows the denial", func(context.Context) error {
		res = h.Run(main, clitest.RunOptions{Terminal: true, Width: 200}, "status", "web")
		// The counts come from the Workload's status, a hop after the
		// instances the denial is read from.
		if !strings.Contains(res.Stdout, "LHR    lhr        default     1/2     1/2          quota exceeded") {
			return fmt.Errorf("exit %d:\n%s%s", res.Code, res.Stdout, res.Stderr)
		}
		return nil
	})
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	mustContain(t, "status", res.Stdout,
		// An instance the quota service denied was never created on the
		// runtime: it is not up to date (the stand-in counted it as such).
		"Health:    Degraded — 3/4 instances ready, 3/4 up to date",
		"Revision:  1",
		"LHR    lhr        default     1/2     1/2          quota exceeded",
		"Pending (quota exceeded)",
		"→ The project is at its quota: see what is used with datumctl compute quota --city LHR")

	js := h.Run(main, clitest.RunOptions{}, "status", "web", "-o", "json")
	var v struct {
		Health string `json:"health"`
		Cities []struct {
			City  string `json:"city"`
			State string `json:"state"`
		} `json:"cities"`
	}
	if err := json.Unmarshal([]byte(js.Stdout), &v); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, js.Stdout)
	}
	if v.Health != "Degraded" || len(v.Cities) != 2 || v.Cities[1].State != "quota exceeded" {
		t.Errorf("json %+v", v)
	}

	missing := h.Run(main, clitest.RunOptions{}, "status", "nope")
	if missing.Code != cmdutil.ExitFailure {
		t.Errorf("exit %d", missing.Code)
	}
	mustContain(t, "stderr", missing.Stderr, `workload "nope" not found in namespace `+h.Namespace, "→ List the workloads with: datumctl compute workloads")
}

func TestQuotaShowsUsageAgainstTheProjectsLimits(t *testing.T) {
	t.Parallel()
	// d1-standard-2 is 1 vCPU and 2 GiB: 5 instances, 5 of 8 vCPU, 10 of
	// 16 GiB; LHR's third instance is over the instance limit.
	h := live(t, clilive.Grant{Instances: 5, VCPUs: "8", Memory: "16Gi"})
	growIntoLHR(t, h, 3)
	h.Eventually("LHR's third instance denied quota", func(ctx context.Context) error {
		byCity, err := h.Instances(ctx, "web")
		if err != nil {
			return err
		}
		if len(byCity["LHR"]) != 3 {
			return fmt.Errorf("%d LHR instances", len(byCity["LHR"]))
		}
		for _, c := range byCity["LHR"][2].Status.Conditions {
			if c.Type == computev1alpha.ConditionQuotaGranted && c.Reason == computev1alpha.ReasonQuotaExceeded {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", byCity["LHR"][2].Status.Conditions)
	})
	h.Eventually("the quota service counts 5 instances", func(ctx context.Context) error {
		var buckets quotav1alpha1.AllowanceBucketList
		if err := h.Client.List(ctx, &buckets); err != nil {
			return err
		}
		for _, b := range buckets.Items {
			if b.Spec.ConsumerRef.Name == h.Project && b.Spec.ResourceType == computev1alpha.ResourceTypeInstances && b.Status.Allocated == 5 {
				return nil
			}
		}
		return fmt.Errorf("no instance bucket of %s at 5", h.Project)
	})

	res := h.Run(main, clitest.RunOptions{Terminal: true, Width: 160}, "quota")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	mustContain(t, "quota", res.Stdout, "instances   5        5        0           [at limit]", "LHR    2           2      4 GiB    1",
		"Waiting for quota:", "Pending (quota exceeded)")
}

func TestInstancesAreFilteredByWorkloadAndCityAndDescribed(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.CreateWorkload(clitest.NewWorkload("api").Placement("default", 1, "DFW").Build())
	h.WaitRolledOut("web")
	h.WaitRolledOut("api")
	h.FailInstance("web", "LHR", 1, computev1alpha.ReasonInstanceCrashing)

	all := h.Run(main, clitest.RunOptions{}, "instances")
	if n := strings.Count(all.Stdout, "\n"); n != 6 {
		t.Errorf("want a header and 5 instances:\n%s", all.Stdout)
	}
	lhr := h.Run(main, clitest.RunOptions{}, "instances", "list", "--workload", "web", "--city", "lhr")
	lines := strings.Split(strings.TrimSpace(cells(lhr.Stdout)), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[2], "\tFailed (crashing)") {
		t.Fatalf("want the two LHR instances of web:\n%s", lhr.Stdout)
	}
	none := h.Run(main, clitest.RunOptions{}, "instances", "--city", "SIN")
	if none.Code != 0 || none.Stdout != "" || !strings.Contains(none.Stderr, "No instances found in SIN") {
		t.Errorf("nothing found goes to stderr: %+v", none)
	}

	name := strings.Split(lines[2], "\t")[0]
	d := h.Run(main, clitest.RunOptions{}, "instances", "describe", name)
	if d.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", d.Code, d.Stderr)
	}
	mustContain(t, "describe", d.Stdout, "Status:      Failed (crashing)", "Conditions:", "InstanceCrashing",
		"Next steps:")
	yaml := h.Run(main, clitest.RunOptions{}, "instances", "describe", name, "-o", "yaml")
	mustContain(t, "yaml", yaml.Stdout, "kind: Instance", "name: "+name)
	gone := h.Run(main, clitest.RunOptions{}, "instances", "describe", "web-nope-0")
	if gone.Code != cmdutil.ExitFailure || !strings.Contains(gone.Stderr, "datumctl compute instances") {
		t.Errorf("a missing instance names the fix: %+v", gone)
	}
}

func TestDeployFailsFastWhenTheNewImageCannotBePulled(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.WaitRolledOut("web")

	// The new template makes the provider fail to pull the image of the
	// first instance it replaces in each city.
	bad := clitest.NewWorkload("web").Namespace(h.Namespace).Image("ghcr.io/acme/web:bad").Build()
	bad.APIVersion, bad.Kind = computev1alpha.GroupVersion.String(), computev1alpha.WorkloadKind
	bad.Spec.Template.Metadata.Annotations = clilive.FailingAnnotations(computev1alpha.ReasonImageUnavailable)
	manifest, err := json.Marshal(bad)
	if err != nil {
		t.Fatal(err)
	}
	res := h.Run(main, clitest.RunOptions{Stdin: string(manifest)}, "deploy", "-f", "-", "--timeout", "45s")
	if res.Code != cmdutil.ExitFailure {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
	mustContain(t, "stderr", res.Stderr,
		"web cannot finish rolling out:",
		"Failed (image unavailable)",
		"→ Then deploy a fixed image: datumctl compute deploy web --image <image>",
		"→ Or roll back to the previous revision: datumctl compute rollout undo web")
}
