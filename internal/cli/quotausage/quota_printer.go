package quotausage

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
	"github.com/citycells/compute/internal/quota/sizing"
	"github.com/citycells/compute/internal/status"
)

// Resource names as the CLI shows them.
const (
	ResourceInstances = "instances"
	ResourceVCPU      = "vCPU"
	ResourceMemory    = "memory"
)

// Input is what the quota view is built from.
type Input struct {
	// Target names the project.
	Target cmdutil.Target
	// Instances are the instances of the namespace.
	Instances []computev1alpha.Instance
	// Buckets are the AllowanceBuckets readable in the project.
	Buckets []quotav1alpha1.AllowanceBucket
	// LimitsUnavailable says why there are no buckets, if so.
	LimitsUnavailable string
	// City restricts usage per city and blocked instances to one city.
	City string
	// InstanceTypes is the project's InstanceType catalog, which sizes the
	// instances as the cells size their claims.
	InstanceTypes catalog.Catalog
}

// View is what `quota` shows and prints with -o json|yaml.
type View struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Project describes the project.
	Project string `json:"project"`
	// City is the city asked for, if any.
	City string `json:"city,omitempty"`
	// Resources are usage against limits, per project.
	Resources []Usage `json:"resources"`
	// LimitsUnavailable says why limits are missing, if they are.
	LimitsUnavailable string `json:"limitsUnavailable,omitempty"`
	// Cities are usage per city.
	Cities []CityUsage `json:"cities"`
	// Blocked are instances waiting for quota.
	Blocked []Blocked `json:"blocked,omitempty"`
}

// Usage is one resource's usage and limit. Amounts are in the quota
// system's units: instances, millicores, MiB.
type Usage struct {
	// Resource is instances, vCPU or memory.
	Resource string `json:"resource"`
	// ResourceType is the quota resource type.
	ResourceType string `json:"resourceType"`
	// Used is what is allocated.
	Used int64 `json:"used"`
	// Limit is the project's limit; nil when unknown.
	Limit *int64 `json:"limit,omitempty"`
	// Available is what is left; nil when unknown.
	Available *int64 `json:"available,omitempty"`
	// AtLimit is set when nothing more fits.
	AtLimit bool `json:"atLimit"`
	// InCity is the usage in the city asked for.
	InCity *int64 `json:"inCity,omitempty"`
}

// CityUsage is the usage of one city, from its instances holding quota.
type CityUsage struct {
	City      string `json:"city"`
	Instances int64  `json:"instances"`
	MilliCPU  int64  `json:"milliCPU"`
	MemoryMiB int64  `json:"memoryMiB"`
	// Blocked counts instances waiting for quota.
	Blocked int `json:"blocked"`
}

// Blocked is an instance quota holds back.
type Blocked struct {
	Instance string `json:"instance"`
	Workload string `json:"workload"`
	City     string `json:"city"`
	Status   string `json:"status"`
	Reason   string `json:"reason"`
	Message  string `json:"message,omitempty"`
}

// Build computes the quota view.
func Build(in Input) *View {
	v := &View{APIVersion: cmdutil.ViewAPIVersion, Kind: "QuotaUsage", Project: in.Target.String(), City: in.City,
		LimitsUnavailable: in.LimitsUnavailable}
	cities := map[string]*CityUsage{}
	city := func(code string) *CityUsage {
		if cities[code] == nil {
			cities[code] = &CityUsage{City: code}
		}
		return cities[code]
	}
	for i := range in.Instances {
		inst := &in.Instances[i]
		code := inst.Labels[computev1alpha.CityCodeLabel]
		switch {
		case holdsQuota(inst):
			cpu, mem := Size(inst, in.InstanceTypes)
			cu := city(code)
			cu.Instances++
			cu.MilliCPU += cpu
			cu.MemoryMiB += mem
		case blockedByQuota(inst):
			city(code).Blocked++
			if in.City == "" || in.City == code {
				st := view.Instance(inst)
				v.Blocked = append(v.Blocked, Blocked{Instance: inst.Name, Workload: inst.Labels[computev1alpha.WorkloadNameLabel],
					City: code, Status: st.String(), Reason: st.Reason, Message: st.Message})
			}
		}
	}
	var total CityUsage
	for code, cu := range cities {
		total.Instances += cu.Instances
		total.MilliCPU += cu.MilliCPU
		total.MemoryMiB += cu.MemoryMiB
		if in.City == "" || in.City == code {
			v.Cities = append(v.Cities, *cu)
		}
	}
	slices.SortFunc(v.Cities, func(a, b CityUsage) int { return cmp.Compare(a.City, b.City) })
	slices.SortFunc(v.Blocked, func(a, b Blocked) int {
		return cmp.Or(cmp.Compare(a.City, b.City), cmp.Compare(a.Instance, b.Instance))
	})

	buckets := projectBuckets(in.Buckets, in.Target.Project)
	for _, r := range []struct {
		name, typ string
		used      int64
		inCity    func(CityUsage) int64
	}{
		{ResourceInstances, computev1alpha.ResourceTypeInstances, total.Instances, func(c CityUsage) int64 { return c.Instances }},
		{ResourceVCPU, computev1alpha.ResourceTypeVCPUs, total.MilliCPU, func(c CityUsage) int64 { return c.MilliCPU }},
		{ResourceMemory, computev1alpha.ResourceTypeMemory, total.MemoryMiB, func(c CityUsage) int64 { return c.MemoryMiB }},
	} {
		u := Usage{Resource: r.name, ResourceType: r.typ, Used: r.used}
		if b, ok := buckets[r.typ]; ok {
			limit, avail := b.Status.Limit, b.Status.Available
			u.Used, u.Limit, u.Available = b.Status.Allocated, &limit, &avail
			u.AtLimit = avail <= 0 || b.Status.Allocated >= limit
		}
		if in.City != "" {
			n := r.inCity(*city(in.City))
			u.InCity = &n
		}
		v.Resources = append(v.Resources, u)
	}
	if len(buckets) == 0 && v.LimitsUnavailable == "" {
		v.LimitsUnavailable = "no quota limits are recorded for this project yet"
	}
	return v
}

// holdsQuota reports whether inst's quota is granted (or not enforced).
func holdsQuota(inst *computev1alpha.Instance) bool {
	return inst.DeletionTimestamp == nil &&
		meta.IsStatusConditionTrue(inst.Status.Conditions, computev1alpha.ConditionQuotaGranted)
}

// blockedByQuota reports whether quota holds inst back.
func blockedByQuota(inst *computev1alpha.Instance) bool {
	if inst.DeletionTimestamp != nil {
		return false
	}
	q := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionQuotaGranted)
	if q != nil && q.Status != metav1.ConditionTrue && q.Reason != computev1alpha.ReasonPendingEvaluation {
		return true
	}
	st := view.Instance(inst)
	return (st.Phase == status.PhasePending && strings.HasPrefix(st.Detail, "quota")) || st.Detail == "no quota budget"
}

// projectBuckets picks, per resource type, the bucket of the project's
// consumer: the one named like the project when known, else the first
// consumer by name.
func projectBuckets(all []quotav1alpha1.AllowanceBucket, project string) map[string]quotav1alpha1.AllowanceBucket {
	slices.SortFunc(all, func(a, b quotav1alpha1.AllowanceBucket) int {
		return cmp.Or(cmp.Compare(a.Spec.ConsumerRef.Name, b.Spec.ConsumerRef.Name), cmp.Compare(a.Name, b.Name))
	})
	out := map[string]quotav1alpha1.AllowanceBucket{}
	for _, b := range all {
		if project != "" && b.Spec.ConsumerRef.Name != project {
			continue
		}
		if _, seen := out[b.Spec.ResourceType]; !seen {
			out[b.Spec.ResourceType] = b
		}
	}
	if len(out) == 0 && project != "" {
		return projectBuckets(all, "")
	}
	return out
}

// Size returns the vCPU (millicores) and memory (MiB) an instance claims,
// by the rule the cell sizes its quota claims with (sizing.Of), from the
// InstanceType catalog types. An instance the cell cannot size claims
// nothing: zero.
func Size(inst *computev1alpha.Instance, types catalog.Catalog) (milliCPU, memoryMiB int64) {
	s, err := sizing.Of(inst, types)
	if err != nil {
		return 0, 0
	}
	return s.MilliCPU, s.MemoryMiB
}

// Amount renders an amount of a resource: "3", "2.5" (vCPU), "12 GiB".
func Amount(resourceName string, n int64) string {
	switch resourceName {
	case ResourceVCPU:
		if n%1000 == 0 {
			return fmt.Sprint(n / 1000)
		}
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", float64(n)/1000), "0"), ".")
	case ResourceMemory:
		if n >= 1024 && n%1024 == 0 {
			return fmt.Sprintf("%d GiB", n/1024)
		}
		if n >= 1024 {
			return fmt.Sprintf("%.1f GiB", float64(n)/1024)
		}
		return fmt.Sprintf("%d MiB", n)
	}
	return fmt.Sprint(n)
}

// ResourceTable renders usage as RESOURCE, USED, LIMIT, AVAILABLE, NOTE
// (and IN <CITY> with --city).
func (v *View) ResourceTable() *cmdutil.Table {
	headers := []string{"RESOURCE", "USED", "LIMIT", "AVAILABLE"}
	if v.City != "" {
		headers = append(headers, "IN "+v.City)
	}
	t := cmdutil.NewTable(append(headers, "NOTE")...)
	for _, u := range v.Resources {
		limit, avail, note := "-", "-", ""
		if u.Limit != nil {
			limit, avail = Amount(u.Resource, *u.Limit), Amount(u.Resource, max(*u.Available, 0))
		}
		if u.AtLimit {
			note = "[at limit]"
		}
		row := []string{u.Resource, Amount(u.Resource, u.Used), limit, avail}
		if v.City != "" {
			row = append(row, Amount(u.Resource, *u.InCity))
		}
		t.AddRow(append(row, note)...)
	}
	return t
}

// CityTable renders usage per city as CITY, INSTANCES, VCPU, MEMORY,
// BLOCKED.
func (v *View) CityTable() *cmdutil.Table {
	t := cmdutil.NewTable("CITY", "INSTANCES", "VCPU", "MEMORY", "BLOCKED")
	for _, c := range v.Cities {
		t.AddRow(c.City, fmt.Sprint(c.Instances), Amount(ResourceVCPU, c.MilliCPU), Amount(ResourceMemory, c.MemoryMiB), fmt.Sprint(c.Blocked))
	}
	return t
}

// Render writes the view. cmd renders command lines for next steps. The
// view is a document: its tables are aligned in a pipe too, and only cut
// to fit on a terminal.
func (v *View) Render(w io.Writer, terminal bool, width int, cmd func(string, ...any) string) error {
	if !terminal {
		width = 0
	}
	terminal = true
	var b strings.Builder
	fmt.Fprintf(&b, "Quota for %s (limits are shared by every city):\n", v.Project)
	if v.LimitsUnavailable != "" {
		fmt.Fprintf(&b, "Note: %s.\n", v.LimitsUnavailable)
	}
	b.WriteByte('\n')
	_ = v.ResourceTable().Render(&b, terminal, width)
	b.WriteByte('\n')
	if len(v.Cities) == 0 {
		if v.City != "" {
			fmt.Fprintf(&b, "No instances in %s.\n", v.City)
		} else {
			b.WriteString("No instances hold quota.\n")
		}
	} else {
		_ = v.CityTable().Render(&b, terminal, width)
	}
	if len(v.Blocked) > 0 {
		b.WriteString("\nWaiting for quota:\n")
		t := cmdutil.NewTable("INSTANCE", "WORKLOAD", "CITY", "STATUS", "MESSAGE~")
		for _, bl := range v.Blocked {
			t.AddRow(bl.Instance, bl.Workload, bl.City, bl.Status, bl.Message)
		}
		_ = t.Render(&b, terminal, width)
		var steps []string
		self := cmd("quota")
		for _, s := range status.NextSteps(v.Blocked[0].Reason, status.Hints{Cmd: cmd, Workload: v.Blocked[0].Workload, City: v.City}) {
			// This is the quota command already.
			if !strings.Contains(s, self) {
				steps = append(steps, s)
			}
		}
		if len(steps) > 0 {
			b.WriteString("\nNext steps:\n")
			for _, s := range steps {
				fmt.Fprintf(&b, "  %s\n", s)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
