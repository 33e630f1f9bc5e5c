package view

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/clitest"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/placement"
)

// (A printer test: it renders objects built in memory, in the states the
// controllers write; no controller runs. The command tests in
// internal/cli run on the live plane, with the real controllers.)
func TestInstanceStatusInWords(t *testing.T) {
	for name, tc := range map[string]struct {
		state        clitest.State
		want         string
		wantTerminal bool
	}{
		"a serving instance is Available":               {clitest.Available, "Available", false},
		"a provisioning instance is Starting":           {clitest.Provisioning, "Starting", false},
		"an instance waiting for quota says so":         {clitest.PendingQuota, "Pending (quota)", false},
		"a quota denial is named, and terminal":         {clitest.QuotaExceeded, "Pending (quota exceeded)", true},
		"an image that cannot be pulled is a failure":   {clitest.ImageUnavailable, "Failed (image unavailable)", true},
		"a crash loop is a failure":                     {clitest.Crashing, "Failed (crashing)", true},
		"a configuration the provider rejects is named": {clitest.ConfigError, "Failed (configuration error)", true},
	} {
		t.Run(name, func(t *testing.T) {
			inst := &computev1alpha.Instance{Status: clitest.InstanceStatus(tc.state, "h", "DFW", 0)}
			got := Instance(inst)
			if got.String() != tc.want || got.Terminal != tc.wantTerminal {
				t.Errorf("got %q (terminal %v), want %q (terminal %v)", got, got.Terminal, tc.want, tc.wantTerminal)
			}
		})
	}
	t.Run("an instance without a Ready condition is Pending", func(t *testing.T) {
		if got := Instance(&computev1alpha.Instance{}).String(); got != "Pending" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("an instance being deleted is Terminating", func(t *testing.T) {
		inst := &computev1alpha.Instance{Status: clitest.InstanceStatus(clitest.Available, "h", "DFW", 0)}
		inst.DeletionTimestamp = ptr.To(metav1.Now())
		if got := Instance(inst).String(); got != "Terminating" {
			t.Errorf("got %q", got)
		}
	})
	for reason, want := range map[string]struct {
		words, short string
		terminal     bool
	}{
		computev1alpha.ReasonAwaitingPropagation: {"Pending (waiting for referenced data)", "waiting for referenced data", false},
		computev1alpha.ReasonResolving:           {"Pending (waiting for referenced data)", "waiting for referenced data", false},
		computev1alpha.ReasonSourceNotFound:      {"Pending (source not found)", "source not found", true},
		computev1alpha.ReasonSourceUnauthorized:  {"Pending (source unauthorized)", "source unauthorized", true},
		computev1alpha.ReasonSourceTooLarge:      {"Pending (source too large)", "source too large", true},
	} {
		t.Run("an instance the ReferencedData gate holds for "+reason+" says so", func(t *testing.T) {
			inst := &computev1alpha.Instance{Status: computev1alpha.InstanceStatus{Conditions: []metav1.Condition{{
				Type: computev1alpha.ConditionReady, Status: metav1.ConditionFalse, Reason: reason}}}}
			got := Instance(inst)
			if got.String() != want.words || got.Short() != want.short || got.Terminal != want.terminal {
				t.Errorf("got %q / %q (terminal %v), want %q / %q (terminal %v)", got, got.Short(), got.Terminal, want.words, want.short, want.terminal)
			}
		})
	}
	t.Run("an unknown reason is spelled out", func(t *testing.T) {
		inst := &computev1alpha.Instance{Status: computev1alpha.InstanceStatus{Conditions: []metav1.Condition{{
			Type: computev1alpha.ConditionReady, Status: metav1.ConditionFalse, Reason: "VolumeDetached"}}}}
		if got := Instance(inst).String(); got != "Pending (volume detached)" {
			t.Errorf("got %q", got)
		}
	})
}

// world builds a snapshot of workload w in memory: one deployment per
// placement × city, its instances in the states given, statuses as the
// controllers write them; the Workload's status is what the server
// computes from them (clitest.WriteStatus).
type world struct {
	snap        Snapshot
	deployments []computev1alpha.WorkloadDeployment
	cities      locations.Cities
	cells       []func(*world)
	after       []func(*Snapshot)
}

// viewNow is the moment the snapshots are read.
var viewNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func newWorld(w *computev1alpha.Workload) *world {
	w.UID = "uid-1"
	w.Generation = 1
	w.Status.CurrentRevision = 2
	return &world{snap: Snapshot{Workload: w, Now: viewNow}}
}

// city adds the deployment of city with instances in states; ready
// counts the Available ones.
func (wo *world) city(city string, states ...clitest.State) *world {
	w := wo.snap.Workload
	p := &w.Spec.Placements[0]
	tpl := placement.CityTemplate(w, &w.Spec.Template, city)
	wd := placement.Desired(w, p, &placement.Target{Placement: p.Name, CityCode: city, Name: names.WorkloadDeploymentName(w.Name, w.UID, p.Name, city)}, &tpl)
	wd.Generation, wd.Status.ObservedGeneration = 1, 1
	hash := names.TemplateHash(&wd.Spec.Template)
	wd.Status.TemplateHash = hash
	var blocked *metav1.Condition
	for i, s := range states {
		inst := computev1alpha.Instance{}
		inst.Name = names.InstanceName(wd.Name, i)
		inst.Labels = map[string]string{computev1alpha.WorkloadDeploymentNameLabel: wd.Name, computev1alpha.CityCodeLabel: city}
		inst.Spec.Controller = &computev1alpha.InstanceController{TemplateHash: hash}
		inst.Status = clitest.InstanceStatus(s, hash, city, i)
		wo.snap.Instances = append(wo.snap.Instances, inst)
		wd.Status.Replicas++
		wd.Status.UpdatedReplicas++
		if s == clitest.Available {
			wd.Status.ReadyReplicas++
		} else if blocked == nil {
			blocked = &inst.Status.Conditions[0]
		}
	}
	wd.Status.DesiredReplicas = p.ScaleSettings.MinReplicas
	wd.Status.Conditions = clitest.CellConditions(wd.Status.ReplicaCounts, blocked)
	wo.deployments = append(wo.deployments, *wd)
	return wo
}

// cell changes what the cells report, before the server computes the
// Workload's status.
func (wo *world) cell(f func(*world)) *world { wo.cells = append(wo.cells, f); return wo }

// with changes the snapshot after the server computed the status.
func (wo *world) with(f func(*Snapshot)) *world { wo.after = append(wo.after, f); return wo }

// snapshot is what the CLI reads: the Workload with the status the server
// computed from the world, and the instances.
func (wo *world) snapshot() Snapshot {
	for _, f := range wo.cells {
		f(wo)
	}
	clitest.WriteStatus(wo.snap.Workload, wo.deployments, wo.cities)
	for _, f := range wo.after {
		f(&wo.snap)
	}
	return wo.snap
}

func TestAssess(t *testing.T) {
	base := func() *computev1alpha.Workload { return clitest.NewWorkload("web").Build() }
	for name, tc := range map[string]struct {
		world       *world
		expect      Expectation
		wantLine    string
		wantDone    bool
		wantHealth  string
		wantFailure string
	}{
		"every city ready is done and healthy": {
			world:    newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.Available),
			wantLine: "DFW 2/2 ready · LHR 2/2 ready", wantDone: true, wantHealth: HealthHealthy,
		},
		"a city still provisioning is starting": {
			world:    newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.Provisioning),
			wantLine: "DFW 2/2 ready · LHR 1/2 starting", wantHealth: HealthProgressing,
		},
		"a city without a deployment yet waits for it": {
			world: newWorld(base()).city("DFW", clitest.Available, clitest.Available),
			// The server has not caught up while a city has no deployment.
			wantLine: "waiting for the management plane to apply generation 1", wantHealth: HealthProgressing,
		},
		"a management plane behind the spec is waited for": {
			world: newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.Available).
				with(func(s *Snapshot) { s.Workload.Generation = 2 }),
			wantLine: "waiting for the management plane to apply generation 2", wantHealth: HealthProgressing,
		},
		"a failure of the spec before the latest is no failure until the management plane applies it": {
			world: newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.ImageUnavailable, clitest.ImageUnavailable).
				with(func(s *Snapshot) { s.Workload.Generation = 2 }),
			wantLine: "waiting for the management plane to apply generation 2", wantHealth: HealthProgressing,
		},
		"an image that cannot be pulled fails the rollout": {
			world:    newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.ImageUnavailable, clitest.ImageUnavailable),
			wantLine: "DFW 2/2 ready · LHR 0/2 image unavailable", wantHealth: HealthDegraded, wantFailure: "ImageUnavailable",
		},
		"a quota denial everywhere is failing": {
			world:    newWorld(base()).city("DFW", clitest.QuotaExceeded, clitest.QuotaExceeded).city("LHR", clitest.QuotaExceeded, clitest.QuotaExceeded),
			wantLine: "DFW 0/2 quota exceeded · LHR 0/2 quota exceeded", wantHealth: HealthFailing, wantFailure: "QuotaExceeded",
		},
		"a failure of an old template does not fail a rollout that replaces it": {
			world: newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.Available).
				cell(func(wo *world) {
					wo.snap.Instances[3].Spec.Controller.TemplateHash = "old"
					wo.snap.Instances[3].Status = clitest.InstanceStatus(clitest.Crashing, "old", "LHR", 1)
					wo.deployments[1].Status.ReadyReplicas, wo.deployments[1].Status.UpdatedReplicas = 1, 1
				}),
			wantLine: "DFW 2/2 ready · LHR 1/2 updating", wantHealth: HealthProgressing,
		},
		"a city restart is pending until its deployment carries it": {
			world:    newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.Available),
			expect:   Expectation{CityRestarts: map[string]string{"DFW": "2026-06-01T12:00:00Z"}},
			wantLine: "DFW 2/2 restart pending · LHR 2/2 ready", wantHealth: HealthProgressing,
		},
		"a city no longer placed is removed before the rollout is done": {
			world: newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.Available).
				cell(func(wo *world) { wo.snap.Workload.Spec.Placements[0].CityCodes = []string{"DFW"} }),
			wantLine: "DFW 2/2 ready · LHR removing (2 left)", wantHealth: HealthProgressing,
		},
		"a city that is not enabled fails with the reason": {
			world: newWorld(base()).city("DFW", clitest.Available, clitest.Available).cell(func(wo *world) {
				wo.cities = locations.ReadyCities(clitest.LocationNamespace, "DFW")
			}),
			wantLine: "DFW 2/2 ready · LHR 0/0 not enabled", wantHealth: HealthDegraded, wantFailure: computev1alpha.ReasonLocationNotBound,
		},
		"a city nobody hears from is unreachable with its last known counts, never done": {
			world: newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.Available).
				cell(func(wo *world) {
					seen := metav1.NewTime(viewNow.Add(-42 * time.Second))
					wo.deployments[1].Status.LastSeenTime = &seen
				}),
			wantLine: "DFW 2/2 ready · LHR 2/2 unreachable (last seen 42s ago)", wantHealth: HealthDegraded,
		},
		"scaled to zero is done": {
			world: newWorld(clitest.NewWorkload("web").Placement("default", 0, "DFW").Build()).city("DFW").
				cell(func(wo *world) { wo.deployments[0].Status.DesiredReplicas = 0 }),
			wantLine: "DFW 0/0 scaled to zero", wantDone: true, wantHealth: HealthScaledDown,
		},
	} {
		t.Run(name, func(t *testing.T) {
			snap := tc.world.snapshot()
			p := Assess(snap, tc.expect)
			sameAnswer(t, snap, p)
			if p.Line() != tc.wantLine {
				t.Errorf("Line() = %q, want %q", p.Line(), tc.wantLine)
			}
			if p.Done != tc.wantDone {
				t.Errorf("Done = %v, want %v", p.Done, tc.wantDone)
			}
			if p.Health() != tc.wantHealth {
				t.Errorf("Health() = %q, want %q", p.Health(), tc.wantHealth)
			}
			got := ""
			if len(p.Failures) > 0 {
				got = p.Failures[0].Reason
			}
			if got != tc.wantFailure {
				t.Errorf("worst failure = %q, want %q (%+v)", got, tc.wantFailure, p.Failures)
			}
		})
	}
}

func TestFailuresAreGroupedByCityAndMessage(t *testing.T) {
	groups := GroupFailures([]Failure{
		{Instance: "web-lhr-0", City: "LHR", Status: "Failed (crashing)", Reason: "InstanceCrashing", Message: "exit 1"},
		{Instance: "web-lhr-1", City: "LHR", Status: "Failed (crashing)", Reason: "InstanceCrashing", Message: "exit 1"},
		{Instance: "web-dfw-0", City: "DFW", Status: "Failed (crashing)", Reason: "InstanceCrashing", Message: "exit 1"},
	})
	var subjects []string
	for _, g := range groups {
		subjects = append(subjects, g.Subject())
	}
	want := []string{"2 instances in LHR (web-lhr-0, web-lhr-1)", "instance web-dfw-0 in DFW"}
	if diff := cmp.Diff(want, subjects); diff != "" {
		t.Error(diff)
	}
}

func TestEveryTerminalReasonHasANextStep(t *testing.T) {
	for _, r := range []string{
		computev1alpha.ReasonImageUnavailable, computev1alpha.ReasonInstanceCrashing, computev1alpha.ReasonConfigurationError,
		computev1alpha.ReasonQuotaExceeded, computev1alpha.ReasonQuotaNoBudget, computev1alpha.ReasonValidationFailed,
		computev1alpha.ReasonLocationNotBound, computev1alpha.ReasonDeploymentConflict,
	} {
		steps := NextSteps(r, Hints{Workload: "web", CanUndo: true})
		if len(steps) == 0 {
			t.Errorf("%s has no next step", r)
		}
	}
	steps := strings.Join(NextSteps(computev1alpha.ReasonImageUnavailable, Hints{Workload: "web", CanUndo: true}), "\n")
	if !strings.Contains(steps, "datumctl compute rollout undo web") {
		t.Errorf("a failed image offers the rollback:\n%s", steps)
	}
}

// sameAnswer fails t unless p says of every city what the Workload's
// status (computed by the server from the same world) says: the same
// cities, counts, staleness, wave and rollout state; a city done only when
// the server reports it available and not held; a city failed only for a
// reason the server gives it; any other reason the server's own or one an
// instance of the city reports.
func sameAnswer(t *testing.T, s Snapshot, p Progress) {
	t.Helper()
	server := map[[2]string]computev1alpha.WorkloadCityStatus{}
	for _, ps := range s.Workload.Status.Placements {
		for _, cs := range ps.Cities {
			server[[2]string{ps.Name, cs.CityCode}] = cs
		}
	}
	if len(server) != len(p.Cities) {
		t.Errorf("the view shows %d cities, the server reports %d", len(p.Cities), len(server))
	}
	instanceReasons := map[string]bool{}
	for i := range s.Instances {
		instanceReasons[s.Instances[i].Labels[computev1alpha.CityCodeLabel]+"/"+Instance(&s.Instances[i]).Reason] = true
	}
	for _, c := range p.Cities {
		cs, ok := server[[2]string{c.Placement, c.City}]
		if !ok {
			t.Errorf("the view shows %s/%s, which the server does not report", c.Placement, c.City)
			continue
		}
		got := [6]any{c.Desired, c.Ready, c.Updated, c.Replicas, c.Stale, c.Wave}
		want := [6]any{cs.DesiredReplicas, cs.ReadyReplicas, cs.UpdatedReplicas, cs.Replicas, cs.Stale, cs.Wave}
		if got != want || c.Rollout != string(cs.Rollout) {
			t.Errorf("%s: the view says %v %q, the server %v %q", c.City, got, c.Rollout, want, cs.Rollout)
		}
		if c.Done && (!cs.Available && cs.DesiredReplicas > 0 || cs.Reason == computev1alpha.ReasonDeploymentPending) {
			t.Errorf("%s: the view says done, the server %s (available %t)", c.City, cs.Reason, cs.Available)
		}
		if c.Reason != "" && c.Reason != cs.Reason && !instanceReasons[c.City+"/"+c.Reason] {
			t.Errorf("%s: the view gives reason %s, neither the server's (%s) nor an instance's", c.City, c.Reason, cs.Reason)
		}
		if c.Failed && c.Reason != cs.Reason {
			t.Errorf("%s: the view fails the city for %s, the server reports %s", c.City, c.Reason, cs.Reason)
		}
	}
}
