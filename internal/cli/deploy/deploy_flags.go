package deploy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/citycells/compute/internal/cli/cmdutil"
)

// DefaultPlacement names the placement a workload deployed with flags
// gets.
const DefaultPlacement = "default"

// DefaultContainer names the container a workload deployed with flags
// gets.
const DefaultContainer = "app"

// Port is a parsed --port.
type Port struct {
	Name     string
	Port     int32
	Protocol corev1.Protocol
}

// EnvChange is a parsed --env, --env-from-secret or --env-from-configmap:
// set Name to Value or to the key Source names, or remove Name.
type EnvChange struct {
	Name   string
	Value  string
	Source *EnvSource
	Remove bool
}

// portPattern is [name:]port[/protocol].
var portPattern = regexp.MustCompile(`^(?:([a-z0-9]([-a-z0-9]*[a-z0-9])?):)?([0-9]{1,5})(?:/([A-Za-z]+))?$`)

// ParsePort parses "[name:]port[/protocol]": "8080", "http:8080",
// "dns:53/UDP". A port without a name is called "port-<number>".
func ParsePort(s string) (Port, error) {
	m := portPattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Port{}, fmt.Errorf("--port %q: use [name:]port[/protocol], e.g. 8080, http:8080 or dns:53/UDP", s)
	}
	n, err := strconv.Atoi(m[3])
	if err != nil || n < 1 || n > 65535 {
		return Port{}, fmt.Errorf("--port %q: the port must be between 1 and 65535", s)
	}
	p := Port{Name: m[1], Port: int32(n), Protocol: corev1.ProtocolTCP}
	if p.Name == "" {
		p.Name = "port-" + m[3]
	}
	if len(p.Name) > 15 {
		return Port{}, fmt.Errorf("--port %q: the port name must be at most 15 characters", s)
	}
	if m[4] != "" {
		p.Protocol = corev1.Protocol(strings.ToUpper(m[4]))
		switch p.Protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			return Port{}, fmt.Errorf("--port %q: the protocol must be TCP, UDP or SCTP", s)
		}
	}
	return p, nil
}

// ParseEnv parses "NAME=value" (set) or "NAME-" (remove).
func ParseEnv(s string) (EnvChange, error) {
	if name, ok := strings.CutSuffix(s, "-"); ok && !strings.Contains(s, "=") && name != "" {
		return EnvChange{Name: name, Remove: true}, nil
	}
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return EnvChange{}, fmt.Errorf("--env %q: use NAME=value to set a variable or NAME- to remove it", s)
	}
	return EnvChange{Name: name, Value: value}, nil
}

// ParseLocations splits --location values ("a,b", repeated) into Location
// names, in order, once each.
func ParseLocations(values []string) []string {
	var out []string
	for _, v := range values {
		for _, l := range strings.Split(v, ",") {
			if l = strings.TrimSpace(l); l != "" && !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	return out
}

// ParseLocationSelector parses --location-selector values ("k=v,k2=v2",
// repeated) into the labels a Location's topology must carry.
func ParseLocationSelector(values []string) (map[string]string, error) {
	var out map[string]string
	for _, v := range values {
		for _, kv := range strings.Split(v, ",") {
			if kv = strings.TrimSpace(kv); kv == "" {
				continue
			}
			k, val, ok := strings.Cut(kv, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return nil, fmt.Errorf("--location-selector %q is not KEY=VALUE: use e.g. topology.datum.net/city-code=DFW", kv)
			}
			if out == nil {
				out = map[string]string{}
			}
			out[strings.TrimSpace(k)] = strings.TrimSpace(val)
		}
	}
	return out, nil
}

// ParseCities splits --city values ("DFW,LHR", repeated) into upper-case
// city codes, in order, once each.
func ParseCities(values []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, v := range values {
		for _, c := range strings.Split(v, ",") {
			c = strings.ToUpper(strings.TrimSpace(c))
			if c == "" {
				continue
			}
			if !cmdutil.IsCityCode(c) {
				return nil, fmt.Errorf("--city %q is not a city code: use three letters such as DFW", c)
			}
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// nameFromImage derives a workload name from an image reference:
// "ghcr.io/acme/web-app:1.2" gives "web-app".
func nameFromImage(image string) string {
	ref := image
	if i := strings.IndexAny(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		ref = ref[i+1:]
	}
	if i := strings.Index(ref, ":"); i >= 0 {
		ref = ref[:i]
	}
	var b strings.Builder
	for _, r := range strings.ToLower(ref) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	return name
}

// flagOf maps a field path of a Workload built from flags to the flag that
// set it, so validation errors name what the user typed.
func flagOf(path string) string {
	if strings.Contains(path, ".locationSelector") {
		// --city and --location-selector both write it.
		return "--location-selector"
	}
	for _, m := range []struct{ prefix, flag string }{
		{"metadata.name", "NAME"},
		{"spec.placements", "--placement"},
	} {
		if path == m.prefix {
			return m.flag
		}
	}
	rules := []struct{ contains, flag string }{
		{".cityCodes", "--city"},
		{".locations", "--location"},
		{".scaleSettings.minReplicas", "--min"},
		{".scaleSettings.maxReplicas", "--max"},
		{".scaleSettings.instanceManagementPolicy", "--policy"},
		{".imagePullSecrets", "--pull-secret"},
		{".image", "--image"},
		{".ports", "--port"},
		{".valueFrom.secretKeyRef", "--env-from-secret"},
		{".valueFrom.configMapKeyRef", "--env-from-configmap"},
		{".secretRef", "--env-from-secret-all"},
		{".configMapRef", "--env-from-configmap-all"},
		{".env", "--env"},
		{"].secret", "--mount-secret"},
		{"].configMap", "--mount-configmap"},
		{".command", "--command"},
		{".args", "--args"},
		{".resources.instanceType", "--instance-type"},
		{"metadata.name", "NAME"},
	}
	for _, r := range rules {
		if strings.Contains(path, r.contains) {
			return r.flag
		}
	}
	return ""
}

// describeCauses renders the server's field errors, one per line: with
// the flag that set the field when flagOf names one ("--city SIN: city
// SIN is not enabled ..."), with the field path otherwise.
func describeCauses(causes []metav1.StatusCause, flagOf func(path string) string) string {
	lines := make([]string, 0, len(causes))
	for _, c := range causes {
		fl := flagOf(c.Field)
		if fl == "" {
			lines = append(lines, "  "+strings.TrimPrefix(c.Field+": "+c.Message, ": "))
			continue
		}
		bad, detail := splitCause(c)
		lines = append(lines, "  "+strings.TrimSpace(fl+" "+bad)+": "+detail)
	}
	return strings.Join(lines, "\n")
}

// splitCause takes apart a field error's message (`Invalid value: "SIN":
// city SIN is ...`): the bad value if a string, and the rest (or all).
func splitCause(c metav1.StatusCause) (bad, detail string) {
	detail = strings.TrimPrefix(c.Message, field.ErrorType(c.Type).String()+": ")
	if q, err := strconv.QuotedPrefix(detail); err == nil {
		bad, _ = strconv.Unquote(q)
		detail = strings.TrimPrefix(detail[len(q):], ": ")
	}
	if detail == "" {
		detail = c.Message
	}
	return bad, detail
}

// changedFlags lists the flags set on the command line as
// "--name=value", for the change cause.
func changedFlags(fs *pflag.FlagSet, skip ...string) []string {
	var out []string
	fs.Visit(func(f *pflag.Flag) {
		for _, s := range skip {
			if f.Name == s {
				return
			}
		}
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		out = append(out, "--"+f.Name+"="+v)
	})
	return out
}
