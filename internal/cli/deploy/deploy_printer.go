package deploy

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/instances"
	"github.com/citycells/compute/internal/cli/plan"
)

// WavePlan says how a template change travels between w's cities: at once,
// or as spec.rollout says, with its soak time and halt policy. It reads the
// spec as written; the management plane decides the waves
// (status.rollout), and `rollout status` shows them.
func WavePlan(w *computev1alpha.Workload) string {
	r, cities := w.Spec.Rollout, cmdutil.WorkloadCities(w)
	if r == nil || len(cities) <= 1 || (r.Strategy != computev1alpha.WavesCityRollout && r.Strategy != computev1alpha.CanaryCityRollout) {
		return "Every city gets the new template at once; inside each city instances are replaced a few at a time, so the workload keeps serving."
	}
	var b strings.Builder
	if r.Strategy == computev1alpha.WavesCityRollout {
		fmt.Fprintf(&b, "Cities get the new template in the waves of spec.rollout (%s): %s.", r.Strategy, listedWaves(r.Waves, cities))
	} else {
		canary := cities[0]
		if r.Canary != nil && slices.Contains(cities, r.Canary.CityCode) {
			canary = r.Canary.CityCode
		}
		rest := slices.DeleteFunc(slices.Clone(cities), func(c string) bool { return c == canary })
		fmt.Fprintf(&b, "Cities get the new template canary first (%s): %s → %s", r.Strategy, canary, strings.Join(rest, ", "))
		if r.Canary != nil && r.Canary.WaveSize != nil {
			fmt.Fprintf(&b, ", %s at a time", r.Canary.WaveSize.String())
		}
		b.WriteString(".")
	}
	b.WriteString("\nEach wave must be ready")
	if r.SoakSeconds != nil && *r.SoakSeconds > 0 {
		fmt.Fprintf(&b, " for %s", time.Duration(*r.SoakSeconds)*time.Second)
	}
	b.WriteString(" before the next starts")
	if r.Approval == computev1alpha.ManualRolloutApproval {
		b.WriteString(" and is approved with `rollout approve`")
	}
	b.WriteString("; a failing city halts the rollout")
	if r.OnFailure == computev1alpha.RollbackOnFailure {
		b.WriteString(" and its wave is rolled back")
	}
	b.WriteString(".")
	return b.String()
}

// listedWaves renders explicit waves as "DFW → LHR, SIN": each listed wave's
// cities of the workload, then the cities no wave names.
func listedWaves(waves []computev1alpha.RolloutWave, cities []string) string {
	var parts []string
	named := map[string]bool{}
	for _, wave := range waves {
		var in []string
		for _, c := range wave.CityCodes {
			if slices.Contains(cities, c) && !named[c] {
				named[c] = true
				in = append(in, c)
			}
		}
		if len(in) > 0 {
			parts = append(parts, strings.Join(in, ", "))
		}
	}
	rest := slices.DeleteFunc(slices.Clone(cities), func(c string) bool { return named[c] })
	if len(rest) > 0 {
		parts = append(parts, strings.Join(rest, ", "))
	}
	return strings.Join(parts, " → ")
}

// RenderPlan writes what deploying w (the server's answer to the dry run)
// does: a summary of a new workload, or the changes to an existing one.
// The server's warnings (a city whose Location is not ready) go to stderr
// as they arrive.
func RenderPlan(out io.Writer, w *computev1alpha.Workload, target cmdutil.Target, p plan.Diff) {
	var b strings.Builder
	if p.New {
		fmt.Fprintf(&b, "Create workload %s in namespace %s (%s):\n", w.Name, w.Namespace, target)
		writeSummary(&b, w, p)
	} else {
		fmt.Fprintf(&b, "Update workload %s in namespace %s (%s):\n", w.Name, w.Namespace, target)
		for _, c := range p.Changes {
			fmt.Fprintf(&b, "  %s\n", c)
		}
		if p.TemplateChanged {
			b.WriteString(WavePlan(w) + "\n")
		}
	}
	_, _ = io.WriteString(out, b.String())
}

// RenderOffline writes the workload --dry-run=client built from the flags
// or a manifest, which the server has not seen: neither compared with a
// stored workload, nor defaulted, nor checked.
func RenderOffline(out io.Writer, w *computev1alpha.Workload, target cmdutil.Target) {
	var b strings.Builder
	fmt.Fprintf(&b, "Workload %s for namespace %s (%s), built offline: the server has not checked it or filled in its defaults:\n",
		w.Name, w.Namespace, target)
	writeSummary(&b, w, plan.Compute(nil, &w.Spec))
	_, _ = io.WriteString(out, b.String())
}

// writeSummary writes the summary rows of a new workload.
func writeSummary(b *strings.Builder, w *computev1alpha.Workload, p plan.Diff) {
	for _, r := range summary(w, p) {
		fmt.Fprintf(b, "  %-14s %s\n", r[0], r[1])
	}
}

// summary describes a new workload as label/value rows.
func summary(w *computev1alpha.Workload, p plan.Diff) [][2]string {
	spec := &w.Spec.Template.Spec
	var rows [][2]string
	if sb := spec.Runtime.Sandbox; sb != nil {
		for _, c := range sb.Containers {
			rows = append(rows, containerRows(spec, c, len(sb.Containers) > 1)...)
		}
		for _, s := range sb.ImagePullSecrets {
			rows = append(rows, [2]string{"pull secret", s.Name})
		}
	} else if spec.Runtime.VirtualMachine != nil {
		rows = append(rows, [2]string{"runtime", "virtual machine"})
	}
	rows = append(rows,
		[2]string{"cities", fmt.Sprintf("%s (%s)", describeCities(w), cmdutil.Plural(int(p.Instances), "instance", "instances"))},
		[2]string{"instance type", spec.Runtime.Resources.InstanceType})
	for _, pl := range w.Spec.Placements {
		if pl.ScaleSettings.InstanceManagementPolicy == computev1alpha.ParallelInstanceManagementPolicy {
			rows = append(rows, [2]string{"policy", fmt.Sprintf("%s (placement %s)", pl.ScaleSettings.InstanceManagementPolicy, pl.Name)})
		}
	}
	return rows
}

// containerRows describes a container of spec as label/value rows; multi
// names it in the image row.
func containerRows(spec *computev1alpha.InstanceSpec, c computev1alpha.SandboxContainer, multi bool) [][2]string {
	label := "image"
	if multi {
		label = "image (" + c.Name + ")"
	}
	rows := [][2]string{{label, c.Image}}
	if len(c.Command) > 0 {
		rows = append(rows, [2]string{"command", strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")})
	} else if len(c.Args) > 0 {
		rows = append(rows, [2]string{"args", strings.Join(c.Args, " ")})
	}
	if ports := instances.PortList(c.Ports); ports != "" {
		rows = append(rows, [2]string{"ports", ports})
	}
	for _, e := range c.Env {
		rows = append(rows, [2]string{"env", envText(e)})
	}
	for _, e := range c.EnvFrom {
		rows = append(rows, [2]string{"env", envAllText(e)})
	}
	for _, a := range c.VolumeAttachments {
		rows = append(rows, [2]string{"mount", mountText(spec, a)})
	}
	return rows
}

// mountText shows a volume attachment: what the volume holds and where it
// is mounted ("Secret db at /etc/db").
func mountText(spec *computev1alpha.InstanceSpec, a computev1alpha.VolumeAttachment) string {
	what := "volume " + a.Name
	for _, v := range spec.Volumes {
		switch {
		case v.Name != a.Name:
		case v.Secret != nil:
			what = "Secret " + v.Secret.SecretName
		case v.ConfigMap != nil:
			what = "ConfigMap " + v.ConfigMap.Name
		}
	}
	if a.MountPath == nil {
		return what
	}
	return what + " at " + *a.MountPath
}

// envText shows an environment variable: NAME=value, or where its value
// comes from (never the value of a Secret).
func envText(e computev1alpha.EnvVar) string {
	if src := e.ValueFrom; src != nil {
		switch {
		case src.SecretKeyRef != nil:
			return fmt.Sprintf("%s from Secret %s key %s", e.Name, src.SecretKeyRef.Name, src.SecretKeyRef.Key)
		case src.ConfigMapKeyRef != nil:
			return fmt.Sprintf("%s from ConfigMap %s key %s", e.Name, src.ConfigMapKeyRef.Name, src.ConfigMapKeyRef.Key)
		}
	}
	return e.Name + "=" + e.Value
}
