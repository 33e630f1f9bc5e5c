package view

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/placement"
	"github.com/citycells/compute/internal/status"
	"github.com/citycells/compute/test/clitest"
)

// (A printer test: it renders objects built in memory, in the states the
// controllers write; no controller runs. The command tests in
// internal/cli run on the live plane, with the real controllers.)
func TestInstanceStatusInWords(t *testing.T) {
	for name, tc := range map[string]struct {
		state clitest.State
		want  string
	}{
		"a serving instance is Available":               {clitest.Available, "Available"},
		"a provisioning instance is Starting":           {clitest.Provisioning, "Starting"},
		"an instance waiting for quota says so":         {clitest.PendingQuota, "Pending (quota)"},
		"a quota denial is named":                       {clitest.QuotaExceeded, "Pending (quota exceeded)"},
		"an image that cannot be pulled is a failure":   {clitest.ImageUnavailable, "Failed (image unavailable)"},
		"a crash loop is a failure":                     {clitest.Crashing, "Failed (crashing)"},
		"a configuration the provider rejects is named": {clitest.ConfigError, "Failed (configuration error)"},
	} {
		t.Run(name, func(t *testing.T) {
			inst := &computev1alpha.Instance{Status: clitest.InstanceStatus(tc.state, "h", "DFW", 0)}
			if got := Instance(inst); got.String() != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
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
	}{
		computev1alpha.ReasonAwaitingPropagation: {"Pending (waiting for referenced data)", "waiting for referenced data"},
		computev1alpha.ReasonResolving:           {"Pending (waiting for referenced data)", "waiting for referenced data"},
		computev1alpha.ReasonSourceNotFound:      {"Pending (source not found)", "source not found"},
		computev1alpha.ReasonSourceUnauthorized:  {"Pending (source unauthorized)", "source unauthorized"},
		computev1alpha.ReasonSourceTooLarge:      {"Pending (source too large)", "source too large"},
	} {
		t.Run("an instance the ReferencedData gate holds for "+reason+" says so", func(t *testing.T) {
			inst := &computev1alpha.Instance{Status: computev1alpha.InstanceStatus{Conditions: []metav1.Condition{{
				Type: computev1alpha.ConditionReady, Status: metav1.ConditionFalse, Reason: reason}}}}
			got := Instance(inst)
			if got.String() != want.words || ReasonWords(reason) != want.short {
				t.Errorf("got %q / %q, want %q / %q", got, ReasonWords(reason), want.words, want.short)
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
	instances   []computev1alpha.Instance
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
	for i, s := range states {
		inst := computev1alpha.Instance{}
		inst.Name = names.InstanceName(wd.Name, i)
		inst.Labels = map[string]string{computev1alpha.WorkloadDeploymentNameLabel: wd.Name, computev1alpha.CityCodeLabel: city}
		inst.Spec.Controller = &computev1alpha.InstanceController{TemplateHash: hash}
		inst.Status = clitest.InstanceStatus(s, hash, city, i)
		wo.instances = append(wo.instances, inst)
		wd.Status.Replicas++
		wd.Status.UpdatedReplicas++
		if s == clitest.Available {
			wd.Status.ReadyReplicas++
		}
	}
	wd.Status.DesiredReplicas = p.ScaleSettings.MinReplicas
	wo.deployments = append(wo.deployments, *wd)
	return wo
}

// cell changes what the cells report, before the server computes the
// Workload's status.
func (wo *world) cell(f func(*world)) *world { wo.cells = append(wo.cells, f); return wo }

// with changes the snapshot after the server computed the status.
func (wo *world) with(f func(*Snapshot)) *world { wo.after = append(wo.after, f); return wo }

// snapshot is what the CLI reads: the Workload with the status the server
// computed from the world (each cell's status from its instances, as the
// cell computes it).
func (wo *world) snapshot() Snapshot {
	for _, f := range wo.cells {
		f(wo)
	}
	for i := range wo.deployments {
		wd := &wo.deployments[i]
		var mine []computev1alpha.Instance
		for _, inst := range wo.instances {
			if inst.Labels[computev1alpha.WorkloadDeploymentNameLabel] == wd.Name {
				mine = append(mine, inst)
			}
		}
		wd.Status.NotReady = status.NotReady(mine, wd.Status.TemplateHash)
		var blocked *metav1.Condition
		if nr := wd.Status.NotReady; nr != nil {
			blocked = &metav1.Condition{Reason: nr.Reason, Message: nr.Message}
		}
		wd.Status.Conditions = clitest.CellConditions(wd.Status.ReplicaCounts, blocked)
	}
	clitest.WriteStatus(wo.snap.Workload, wo.deployments, wo.cities)
	for _, f := range wo.after {
		f(&wo.snap)
	}
	return wo.snap
}

func TestRead(t *testing.T) {
	base := func() *computev1alpha.Workload { return clitest.NewWorkload("web").Build() }
	for name, tc := range map[string]struct {
		world       *world
		expect      Expectation
		wantLine    string
		wantDone    bool
		wantHealth  computev1alpha.WorkloadHealth
		wantFailure string
	}{
		"every city ready is done and healthy": {
			world:    newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.Available),
			wantLine: "DFW 2/2 ready · LHR 2/2 ready", wantDone: true, wantHealth: computev1alpha.HealthHealthy,
		},
		"a city still provisioning is starting": {
			world:    newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.Provisioning),
			wantLine: "DFW 2/2 ready · LHR 1/2 starting", wantHealth: computev1alpha.HealthProgressing,
		},
		"a city waiting for quota says so": {
			world:    newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.PendingQuota),
			wantLine: "DFW 2/2 ready · LHR 1/2 waiting for quota", wantHealth: computev1alpha.HealthProgressing,
		},
		"a city without a deployment yet waits for it": {
			world: newWorld(base()).city("DFW", clitest.Available, clitest.Available),
			// The server has not caught up while a city has no deployment.
			wantLine: "waiting for the management plane to apply generation 1", wantHealth: computev1alpha.HealthProgressing,
		},
		"a management plane behind the spec is waited for": {
			world: newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.Available).
				with(func(s *Snapshot) { s.Workload.Generation = 2 }),
			wantLine: "waiting for the management plane to apply generation 2", wantHealth: computev1alpha.HealthProgressing,
		},
		"a failure of the spec before the latest is no failure until the management plane applies it": {
			world: newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.ImageUnavailable, clitest.ImageUnavailable).
				with(func(s *Snapshot) { s.Workload.Generation = 2 }),
			wantLine: "waiting for the management plane to apply generation 2", wantHealth: computev1alpha.HealthProgressing,
		},
		"an image that cannot be pulled fails the rollout": {
			world:    newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.ImageUnavailable, clitest.ImageUnavailable),
			wantLine: "DFW 2/2 ready · LHR 0/2 image unavailable", wantHealth: computev1alpha.HealthDegraded, wantFailure: "ImageUnavailable",
		},
		"a quota denial everywhere is failing": {
			world:    newWorld(base()).city("DFW", clitest.QuotaExceeded, clitest.QuotaExceeded).city("LHR", clitest.QuotaExceeded, clitest.QuotaExceeded),
			wantLine: "DFW 0/2 quota exceeded · LHR 0/2 quota exceeded", wantHealth: computev1alpha.HealthFailing, wantFailure: "QuotaExceeded",
		},
		"a failure of an old template does not fail a rollout that replaces it": {
			world: newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.Available).
				cell(func(wo *world) {
					wo.instances[3].Spec.Controller.TemplateHash = "old"
					wo.instances[3].Status = clitest.InstanceStatus(clitest.Crashing, "old", "LHR", 1)
					wo.deployments[1].Status.ReadyReplicas, wo.deployments[1].Status.UpdatedReplicas = 1, 1
				}),
			wantLine: "DFW 2/2 ready · LHR 1/2 updating", wantHealth: computev1alpha.HealthProgressing,
		},
		"a city restart is pending until its deployment carries it": {
			world:  newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.Available),
			expect: Expectation{CityRestarts: map[string]string{"DFW": "2026-06-01T12:00:00Z"}},
			// The server has not seen the restart: its health stands.
			wantLine: "DFW 2/2 restart pending · LHR 2/2 ready", wantHealth: computev1alpha.HealthHealthy,
		},
		"a city no longer placed is removed before the rollout is done": {
			world: newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.Available).
				cell(func(wo *world) { wo.snap.Workload.Spec.Placements[0].CityCodes = []string{"DFW"} }),
			wantLine: "DFW 2/2 ready · LHR removing (2 left)", wantHealth: computev1alpha.HealthProgressing,
		},
		"a city that is not enabled fails with the reason": {
			world: newWorld(base()).city("DFW", clitest.Available, clitest.Available).cell(func(wo *world) {
				wo.cities = locations.ReadyCities(clitest.LocationNamespace, "DFW")
			}),
			wantLine: "DFW 2/2 ready · LHR 0/0 not enabled", wantHealth: computev1alpha.HealthDegraded, wantFailure: computev1alpha.ReasonLocationNotBound,
		},
		"a city nobody hears from is unreachable with its last known counts, never done": {
			world: newWorld(base()).city("DFW", clitest.Available, clitest.Available).city("LHR", clitest.Available, clitest.Available).
				cell(func(wo *world) {
					seen := metav1.NewTime(viewNow.Add(-42 * time.Second))
					wo.deployments[1].Status.LastSeenTime = &seen
				}),
			wantLine: "DFW 2/2 ready · LHR 2/2 unreachable (last seen 42s ago)", wantHealth: computev1alpha.HealthDegraded,
		},
		"scaled to zero is done": {
			world: newWorld(clitest.NewWorkload("web").Placement("default", 0, "DFW").Build()).city("DFW").
				cell(func(wo *world) { wo.deployments[0].Status.DesiredReplicas = 0 }),
			wantLine: "DFW 0/0 scaled to zero", wantDone: true, wantHealth: computev1alpha.HealthScaledToZero,
		},
	} {
		t.Run(name, func(t *testing.T) {
			snap := tc.world.snapshot()
			p := Read(snap, tc.expect)
			sameAnswer(t, snap, tc.expect, p)
			if p.Line() != tc.wantLine {
				t.Errorf("Line() = %q, want %q", p.Line(), tc.wantLine)
			}
			if p.Done != tc.wantDone {
				t.Errorf("Done = %v, want %v", p.Done, tc.wantDone)
			}
			if p.Health != tc.wantHealth {
				t.Errorf("Health = %q, want %q", p.Health, tc.wantHealth)
			}
			got := ""
			if len(p.Failures) > 0 {
				got = p.Failures[0].Reason
			}
			if got != tc.wantFailure {
				t.Errorf("worst failure = %q, want %q (%+v)", got, tc.wantFailure, p.Failures)
			}
			_, done, err := Status(snap, tc.expect)
			if done != tc.wantDone || (err != nil) != (tc.wantFailure != "") {
				t.Errorf("Status() = done %t, err %v; want done %t, failure %q", done, err, tc.wantDone, tc.wantFailure)
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
	groups = append(groups, GroupFailures([]Failure{
		{Instance: "web-sin-0", City: "SIN", Status: "Failed (crashing)", Reason: "InstanceCrashing", Message: "exit 1", More: 3},
	})...)
	for _, g := range groups {
		subjects = append(subjects, g.Subject())
	}
	want := []string{"2 instances in LHR (web-lhr-0, web-lhr-1)", "instance web-dfw-0 in DFW", "4 instances in SIN (web-sin-0 and 3 more)"}
	if diff := cmp.Diff(want, subjects); diff != "" {
		t.Error(diff)
	}
}

// sameAnswer fails t unless p says of every city exactly what the
// Workload's status (computed by the server from the same world) says: the
// same cities, counts, staleness, wave, rollout state, state, reason and
// failing instances; done and failed only as the server's state is (but
// for what the expectation adds: a restart the server has not seen, a
// suspension asked for).
func sameAnswer(t *testing.T, s Snapshot, exp Expectation, p Progress) {
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
	for _, c := range p.Cities {
		cs, ok := server[[2]string{c.Placement, c.City}]
		if !ok {
			t.Errorf("the view shows %s/%s, which the server does not report", c.Placement, c.City)
			continue
		}
		got := [7]any{c.Desired, c.Ready, c.Updated, c.Replicas, c.Stale, c.Wave, c.Status}
		want := [7]any{cs.DesiredReplicas, cs.ReadyReplicas, cs.UpdatedReplicas, cs.Replicas, cs.Stale, cs.Wave, cs.State}
		if got != want || c.Rollout != string(cs.Rollout) {
			t.Errorf("%s: the view says %v %q, the server %v %q", c.City, got, c.Rollout, want, cs.Rollout)
		}
		if _, restarting := exp.CityRestarts[c.City]; restarting || exp.Suspend {
			continue
		}
		if c.Done != cs.State.Done() || c.Failed != (cs.State == computev1alpha.CityStateFailed) {
			t.Errorf("%s: the view says done %t failed %t, the server's state is %s", c.City, c.Done, c.Failed, cs.State)
		}
		if !c.Done && c.Reason != cs.Reason {
			t.Errorf("%s: the view gives reason %s, the server %s", c.City, c.Reason, cs.Reason)
		}
	}
	for _, f := range p.Failures {
		cs := server[[2]string{"default", f.City}]
		if f.Instance != "" && (cs.NotReady == nil || !slices.Contains(cs.NotReady.Instances, f.Instance)) {
			t.Errorf("the view names instance %s failing in %s, which the server does not", f.Instance, f.City)
		}
	}
}
