package instanceplan

import (
	"maps"
	"strconv"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

const (
	deployment = "web"
	oldHash    = "h1"
	newHash    = "h2"
)

// linking are the labels every Instance of the test deployment carries.
var linking = map[string]string{
	computev1alpha.WorkloadUIDLabel:            "w-uid",
	computev1alpha.WorkloadNameLabel:           "web",
	computev1alpha.WorkloadDeploymentUIDLabel:  "wd-uid",
	computev1alpha.WorkloadDeploymentNameLabel: deployment,
	computev1alpha.CityCodeLabel:               "DFW",
	computev1alpha.PlacementNameLabel:          "default",
}

// inputBuilder builds an Input.
type inputBuilder struct{ in Input }

// makeInput returns an OrderedReady input for replicas at newHash.
func makeInput(replicas int32) *inputBuilder {
	return &inputBuilder{in: Input{
		Deployment:   deployment,
		Replicas:     replicas,
		Policy:       computev1alpha.OrderedReadyInstanceManagementPolicy,
		TemplateHash: newHash,
		Labels:       maps.Clone(linking),
	}}
}

func (b *inputBuilder) parallel() *inputBuilder {
	b.in.Policy = computev1alpha.ParallelInstanceManagementPolicy
	return b
}

func (b *inputBuilder) policy(p computev1alpha.InstanceManagementPolicyType) *inputBuilder {
	b.in.Policy = p
	return b
}

func (b *inputBuilder) maxUnavailable(n int32) *inputBuilder {
	b.in.MaxUnavailable = n
	return b
}

func (b *inputBuilder) with(insts ...*instanceBuilder) *inputBuilder {
	for _, i := range insts {
		b.in.Instances = append(b.in.Instances, i.build())
	}
	return b
}

func (b *inputBuilder) build() Input { return b.in }

// instanceBuilder builds an Instance.
type instanceBuilder struct{ i Instance }

// slot returns a Ready, up-to-date, fully labelled Instance in slot k.
func slot(k int) *instanceBuilder {
	l := maps.Clone(linking)
	l[computev1alpha.InstanceIndexLabel] = strconv.Itoa(k)
	return &instanceBuilder{i: Instance{
		Name:         deployment + "-" + strconv.Itoa(k),
		Labels:       l,
		TemplateHash: newHash,
		Ready:        true,
	}}
}

func (b *instanceBuilder) named(n string) *instanceBuilder {
	b.i.Name = n
	return b
}

func (b *instanceBuilder) index(v string) *instanceBuilder {
	b.i.Labels[computev1alpha.InstanceIndexLabel] = v
	return b
}

func (b *instanceBuilder) noIndex() *instanceBuilder {
	delete(b.i.Labels, computev1alpha.InstanceIndexLabel)
	return b
}

func (b *instanceBuilder) without(keys ...string) *instanceBuilder {
	for _, k := range keys {
		delete(b.i.Labels, k)
	}
	return b
}

func (b *instanceBuilder) label(k, v string) *instanceBuilder {
	b.i.Labels[k] = v
	return b
}

func (b *instanceBuilder) outdated() *instanceBuilder {
	b.i.TemplateHash = oldHash
	return b
}

func (b *instanceBuilder) hash(h string) *instanceBuilder {
	b.i.TemplateHash = h
	return b
}

func (b *instanceBuilder) notReady() *instanceBuilder {
	b.i.Ready = false
	return b
}

func (b *instanceBuilder) deleting() *instanceBuilder {
	b.i.Deleting = true
	b.i.Ready = false
	return b
}

func (b *instanceBuilder) build() Instance {
	i := b.i
	i.Labels = maps.Clone(b.i.Labels)
	return i
}
