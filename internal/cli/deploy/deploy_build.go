package deploy

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/plan"
)

// desired returns the workload to apply: the manifest, a new workload
// from the flags, or existing changed by the flags given.
func (o *Options) desired(existing *computev1alpha.Workload, ns string) (*computev1alpha.Workload, error) {
	if o.manifest != nil {
		return o.fromManifest(existing, ns), nil
	}
	if existing == nil {
		return o.create(ns)
	}
	return o.update(existing)
}

// fromManifest returns the manifest as the new state of existing: the
// manifest's spec, labels and annotations over the existing metadata.
func (o *Options) fromManifest(existing *computev1alpha.Workload, ns string) *computev1alpha.Workload {
	m := o.manifest.DeepCopy()
	m.Namespace = ns
	if existing == nil {
		m.ResourceVersion, m.UID = "", ""
		return m
	}
	w := existing.DeepCopy()
	w.Spec = m.Spec
	w.Labels = merge(w.Labels, m.Labels)
	w.Annotations = merge(w.Annotations, m.Annotations)
	return w
}

// merge returns base with over's entries set.
func merge(base, over map[string]string) map[string]string {
	if len(over) == 0 {
		return base
	}
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// create builds a new workload from the flags; --image and --city are
// required.
func (o *Options) create(ns string) (*computev1alpha.Workload, error) {
	var missing []string
	if o.Image == "" {
		missing = append(missing, "--image")
	}
	if !o.changed.has(whereChanges) {
		missing = append(missing, "--city (or --location, --location-selector)")
	}
	if len(missing) > 0 {
		return nil, cmdutil.UsageErrorf("workload %s does not exist yet: to create it, deploy needs %s",
			o.Name, strings.Join(missing, " and "))
	}
	placement := o.Placement
	if placement == "" {
		placement = DefaultPlacement
	}
	instanceType := o.InstanceType
	if instanceType == "" {
		instanceType = catalog.DefaultInstanceType
	}
	ctr := computev1alpha.SandboxContainer{Name: DefaultContainer, Image: o.Image, Command: o.Command, Args: o.Args}
	applyEnv(&ctr, o.Env)
	applyEnv(&ctr, o.EnvFrom)
	applyEnvAll(&ctr, o.EnvAll)
	ctr.Ports = ports(o.Ports)
	w := &computev1alpha.Workload{}
	w.Name, w.Namespace = o.Name, ns
	w.Spec.Template.Spec.Runtime.Resources.InstanceType = instanceType
	sb := &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{ctr}}
	w.Spec.Template.Spec.Runtime.Sandbox = sb
	if err := applyMounts(&w.Spec.Template.Spec, &sb.Containers[0], o.Mounts); err != nil {
		return nil, err
	}
	applyPullSecrets(sb, o.PullSecrets)
	p := computev1alpha.WorkloadPlacement{Name: placement, ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: o.Min}}
	o.applyWhere(&p)
	o.applyScale(&p)
	w.Spec.Placements = []computev1alpha.WorkloadPlacement{p}
	return w, nil
}

// update applies the flags given to a copy of existing.
func (o *Options) update(existing *computev1alpha.Workload) (*computev1alpha.Workload, error) {
	w := existing.DeepCopy()
	if o.changed.has(changeInstanceType) {
		w.Spec.Template.Spec.Runtime.Resources.InstanceType = o.InstanceType
	}
	if err := o.updateSandbox(&w.Spec.Template.Spec); err != nil {
		return nil, err
	}
	if o.touchesPlacement() {
		p, err := o.placementOf(w)
		if err != nil {
			return nil, err
		}
		o.applyWhere(p)
		o.applyScale(p)
	}
	return w, nil
}

// updateSandbox applies the container flags given to the one container
// of spec, and --pull-secret to its sandbox.
func (o *Options) updateSandbox(spec *computev1alpha.InstanceSpec) error {
	sb := spec.Runtime.Sandbox
	if o.changed.has(changePullSecret) {
		if sb == nil {
			return cmdutil.UsageErrorf("workload %s does not run containers: --pull-secret needs a sandbox runtime", o.Name)
		}
		applyPullSecrets(sb, o.PullSecrets)
	}
	if !o.touchesContainer() {
		return nil
	}
	if sb == nil || len(sb.Containers) != 1 {
		return cmdutil.UsageErrorf("workload %s does not run exactly one container: change it with a manifest (deploy -f)", o.Name)
	}
	c := &sb.Containers[0]
	if o.changed.has(changeImage) {
		c.Image = o.Image
	}
	if o.changed.has(changeCommand) {
		c.Command = o.Command
	}
	if o.changed.has(changeArgs) {
		c.Args = o.Args
	}
	if o.changed.has(changePort) {
		c.Ports = ports(o.Ports)
	}
	applyEnv(c, o.Env)
	applyEnv(c, o.EnvFrom)
	applyEnvAll(c, o.EnvAll)
	return applyMounts(spec, c, o.Mounts)
}

// touchesContainer reports whether a container flag was given.
func (o *Options) touchesContainer() bool {
	return o.changed.has(containerChanges)
}

// touchesPlacement reports whether a placement flag was given.
func (o *Options) touchesPlacement() bool {
	return o.changed.has(placementChanges)
}

// placementOf returns the placement the flags change: --placement (added
// when new, which needs --city), or the only one.
func (o *Options) placementOf(w *computev1alpha.Workload) (*computev1alpha.WorkloadPlacement, error) {
	names := make([]string, 0, len(w.Spec.Placements))
	for _, p := range w.Spec.Placements {
		names = append(names, p.Name)
	}
	if o.Placement == "" {
		if len(w.Spec.Placements) == 1 {
			return &w.Spec.Placements[0], nil
		}
		return nil, cmdutil.UsageErrorf("workload %s has placements %s: choose one with --placement", o.Name, strings.Join(names, ", "))
	}
	if i := slices.Index(names, o.Placement); i >= 0 {
		return &w.Spec.Placements[i], nil
	}
	if !o.changed.has(whereChanges) {
		return nil, cmdutil.UsageErrorf("workload %s has no placement %q (it has %s): to add it, give --city (or --location, --location-selector) too",
			o.Name, o.Placement, strings.Join(names, ", "))
	}
	w.Spec.Placements = append(w.Spec.Placements, computev1alpha.WorkloadPlacement{Name: o.Placement,
		ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: o.Min}})
	return &w.Spec.Placements[len(w.Spec.Placements)-1], nil
}

// applyWhere sets where p runs from the flag given, if any: --city as
// cityCodes (which the server's admission rewrites into the
// locationSelector on topology.datum.net/city-code), --location by name,
// --location-selector by topology.
func (o *Options) applyWhere(p *computev1alpha.WorkloadPlacement) {
	if !o.changed.has(whereChanges) {
		return
	}
	p.CityCodes, p.Locations, p.LocationSelector = nil, nil, nil
	switch {
	case o.changed.has(changeCity):
		p.CityCodes = o.Cities
	case o.changed.has(changeLocation):
		for _, l := range o.Locations {
			p.Locations = append(p.Locations, computev1alpha.PlacementLocation{Name: l})
		}
	default:
		p.LocationSelector = &metav1.LabelSelector{MatchLabels: o.LocationSelector}
	}
}

// applyScale sets the scale flags given on p.
func (o *Options) applyScale(p *computev1alpha.WorkloadPlacement) {
	if o.changed.has(changeMin) {
		p.ScaleSettings.MinReplicas = o.Min
	}
	if o.changed.has(changeMax) {
		p.ScaleSettings.MaxReplicas = ptr.To(o.Max)
	}
	if o.Policy != "" {
		p.ScaleSettings.InstanceManagementPolicy = computev1alpha.InstanceManagementPolicyType(o.Policy)
	}
}

// applyEnv sets and removes environment variables of c, keeping order: a
// literal value or a key of a Secret or ConfigMap.
func applyEnv(c *computev1alpha.SandboxContainer, changes []EnvChange) {
	for _, e := range changes {
		i := slices.IndexFunc(c.Env, func(v computev1alpha.EnvVar) bool { return v.Name == e.Name })
		switch {
		case e.Remove && i >= 0:
			c.Env = slices.Delete(c.Env, i, i+1)
		case e.Remove:
		case i >= 0:
			// A new value replaces the old one whatever its source: a
			// variable has one source.
			c.Env[i] = e.envVar()
		default:
			c.Env = append(c.Env, e.envVar())
		}
	}
}

// ports converts parsed ports to API ports.
func ports(ps []Port) []computev1alpha.NamedPort {
	if len(ps) == 0 {
		return nil
	}
	out := make([]computev1alpha.NamedPort, 0, len(ps))
	for _, p := range ps {
		out = append(out, computev1alpha.NamedPort{Name: p.Name, Port: p.Port, Protocol: p.Protocol})
	}
	return out
}

// describeCities renders where the placements run: "DFW ×2, LHR ×2",
// "Location gcp-us-south1-a ×1".
func describeCities(w *computev1alpha.Workload) string {
	var parts []string
	for i := range w.Spec.Placements {
		p := &w.Spec.Placements[i]
		for _, place := range plan.Places(p) {
			part := fmt.Sprintf("%s ×%d", strings.TrimPrefix(place, "city "), p.ScaleSettings.MinReplicas)
			if len(w.Spec.Placements) > 1 {
				part += " (" + p.Name + ")"
			}
			parts = append(parts, part)
		}
	}
	return strings.Join(parts, ", ")
}
