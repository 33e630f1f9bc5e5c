package deploy

import "github.com/spf13/pflag"

// changes is a set of the workload flags given on the command line: what
// deploy changes of an existing workload.
type changes uint32

// The workload flags, one bit each.
const (
	changeImage changes = 1 << iota
	changeCity
	changeMin
	changeMax
	changePort
	changeEnv
	changeCommand
	changeArgs
	changeInstanceType
	changePolicy
	changePlacement
	changeEnvFromSecret
	changeEnvFromConfigMap
	changeMountSecret
	changeMountConfigMap
	changePullSecret
	changeEnvFromSecretAll
	changeEnvFromConfigMapAll
	changeLocation
	changeLocationSelector
)

// Groups of workload flags.
const (
	// containerChanges change the workload's one container.
	containerChanges = changeImage | changeCommand | changeArgs | changePort | changeEnv |
		changeEnvFromSecret | changeEnvFromConfigMap | changeMountSecret | changeMountConfigMap |
		changeEnvFromSecretAll | changeEnvFromConfigMapAll
	// placementChanges change a placement.
	placementChanges = whereChanges | changeMin | changeMax | changePolicy | changePlacement
	// whereChanges say where a placement runs: one of them at a time.
	whereChanges = changeCity | changeLocation | changeLocationSelector
)

// workloadFlag names the flag of a change.
type workloadFlag struct {
	change changes
	name   string
}

// workloadFlags are the flags that describe the workload, in the order
// messages list them; -f excludes them.
func workloadFlags() []workloadFlag {
	return []workloadFlag{
		{changeImage, "image"}, {changeCity, "city"}, {changeLocation, "location"},
		{changeLocationSelector, "location-selector"}, {changeMin, "min"}, {changeMax, "max"},
		{changePort, "port"}, {changeEnv, "env"}, {changeEnvFromSecret, "env-from-secret"},
		{changeEnvFromConfigMap, "env-from-configmap"}, {changeEnvFromSecretAll, "env-from-secret-all"},
		{changeEnvFromConfigMapAll, "env-from-configmap-all"}, {changeMountSecret, "mount-secret"},
		{changeMountConfigMap, "mount-configmap"}, {changePullSecret, "pull-secret"},
		{changeCommand, "command"}, {changeArgs, "args"},
		{changeInstanceType, "instance-type"}, {changePolicy, "policy"}, {changePlacement, "placement"},
	}
}

// changesOf returns the workload flags set on fs.
func changesOf(fs *pflag.FlagSet) changes {
	var c changes
	for _, f := range workloadFlags() {
		if fs.Changed(f.name) {
			c |= f.change
		}
	}
	return c
}

// has reports whether any of the flags in set was given.
func (c changes) has(set changes) bool { return c&set != 0 }

// flags names the flags in c, as typed: "--image", "--city".
func (c changes) flags() []string {
	var out []string
	for _, f := range workloadFlags() {
		if c.has(f.change) {
			out = append(out, "--"+f.name)
		}
	}
	return out
}
