package deploy

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/citycells/compute/internal/cli/cmdutil"
)

// portName is what a parsed port name must look like: a DNS label of at
// most 15 characters.
var portName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// FuzzParsePort checks that --port never panics, accepts only valid ports
// and reads back what it prints; a rejection names the flag and the value.
func FuzzParsePort(f *testing.F) {
	for _, s := range []string{"8080", "http:8080", "dns:53/UDP", "dns:53/udp", " 80 ", "sctp:9/SCTP", "0", "65536",
		"99999", "a-very-long-port-name:80", "HTTP:80", "http:", ":80", "http:80/ICMP", "-x:1", "x-:1", "1/", "http:8080/TCP/UDP", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePort(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("--port %q: ", s)) {
				t.Errorf("ParsePort(%q) error %q does not name the flag and value", s, err)
			}
			return
		}
		if p.Port < 1 || p.Port > 65535 {
			t.Errorf("ParsePort(%q) accepted port %d", s, p.Port)
		}
		if len(p.Name) > 15 || !portName.MatchString(p.Name) {
			t.Errorf("ParsePort(%q) accepted name %q", s, p.Name)
		}
		if !slices.Contains([]corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}, p.Protocol) {
			t.Errorf("ParsePort(%q) accepted protocol %q", s, p.Protocol)
		}
		again, err := ParsePort(fmt.Sprintf("%s:%d/%s", p.Name, p.Port, p.Protocol))
		if err != nil || again != p {
			t.Errorf("ParsePort(%q) = %+v does not read back: %+v, %v", s, p, again, err)
		}
	})
}

// FuzzParseEnv checks that --env never panics and that what it accepts
// is exactly the input: NAME=value sets, NAME- removes.
func FuzzParseEnv(f *testing.F) {
	for _, s := range []string{"A=b", "A=", "A-", "A=b=c", "=b", "-", "", "A", "A-=b", "PATH=/usr/bin:/bin", "É=ü", "A=b-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEnv(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("--env %q: ", s)) {
				t.Errorf("ParseEnv(%q) error %q does not name the flag and value", s, err)
			}
			return
		}
		switch {
		case e.Name == "":
			t.Errorf("ParseEnv(%q) accepted an empty name", s)
		case e.Remove && (s != e.Name+"-" || strings.Contains(s, "=") || e.Value != ""):
			t.Errorf("ParseEnv(%q) = %+v: a removal must be NAME- exactly", s, e)
		case !e.Remove && e.Name+"="+e.Value != s:
			t.Errorf("ParseEnv(%q) = %+v does not read back", s, e)
		case !e.Remove && strings.Contains(e.Name, "="):
			t.Errorf("ParseEnv(%q) = %+v: the name holds '='", s, e)
		}
	})
}

// FuzzParseCities checks that --city never panics, returns each code once,
// upper-case, three letters, in the order given, and is idempotent.
func FuzzParseCities(f *testing.F) {
	for _, s := range [][2]string{{"DFW,LHR", ""}, {"dfw", "LHR,dfw"}, {" lhr , ,DFW", "DFW"}, {"London", ""},
		{"", ""}, {",,,", "AMS"}, {"DF", "DFWX"}, {"ÄBC", ""}, {"d\x00w", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		codes, err := ParseCities([]string{a, b})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--city ") || !strings.Contains(err.Error(), "is not a city code") {
				t.Errorf("ParseCities(%q, %q) error %q does not name the flag", a, b, err)
			}
			return
		}
		seen := map[string]bool{}
		upper := strings.ToUpper(a + "," + b)
		for _, c := range codes {
			if !cmdutil.IsCityCode(c) || seen[c] || !strings.Contains(upper, c) {
				t.Errorf("ParseCities(%q, %q) = %v: %q is not a new code from the input", a, b, codes, c)
			}
			seen[c] = true
		}
		again, err := ParseCities([]string{strings.Join(codes, ",")})
		if err != nil || !slices.Equal(again, codes) {
			t.Errorf("ParseCities(%q, %q) = %v is not idempotent: %v, %v", a, b, codes, again, err)
		}
	})
}

// FuzzParseReferences checks that --env-from-*(-all), --mount-* and --pull-secret
// never panic, name the flag and value when they refuse, and accept only
// what reads back: an object name and key, an absolute path, a volume
// name that is a DNS label.
func FuzzParseReferences(f *testing.F) {
	for _, s := range []string{"A=db:password", "A=db", "=db:k", "A-", "db:/etc/db", "db-", "db:etc", "db:", "-", "",
		"a.b:/x:y", "Db:/x", "regcred", "regcred-", strings.Repeat("a", 70) + ":/x", "a..b:/x", "é=x:y",
		"web:WEB_", "web:1x", "web:", ":X", "web-:X"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, kind := range []string{KindSecret, KindConfigMap} {
			if e, err := ParseEnvFrom(kind, s); err == nil {
				if src := e.Source; src == nil || e.Name+"="+src.Name+":"+src.Key != s || src.Kind != kind {
					t.Errorf("ParseEnvFrom(%s, %q) = %+v does not read back", kind, s, e)
				}
			} else if !strings.HasPrefix(err.Error(), fmt.Sprintf("%s %q: ", flagOfKind("env-from", kind), s)) {
				t.Errorf("ParseEnvFrom(%s, %q) error %q does not name the flag and value", kind, s, err)
			}
			m, err := ParseMount(kind, s)
			if err != nil {
				if !strings.HasPrefix(err.Error(), fmt.Sprintf("%s %q: ", flagOfKind("mount", kind), s)) {
					t.Errorf("ParseMount(%s, %q) error %q does not name the flag and value", kind, s, err)
				}
				continue
			}
			if !m.Remove && !strings.HasPrefix(m.Path, "/") {
				t.Errorf("ParseMount(%s, %q) accepted path %q", kind, s, m.Path)
			}
			if v := VolumeName(kind, m.Name); len(v) > 63 || !portName.MatchString(v) {
				t.Errorf("ParseMount(%s, %q) gives volume %q, not a DNS label", kind, s, v)
			}
		}
		for _, kind := range []string{KindSecret, KindConfigMap} {
			e, err := ParseEnvAll(kind, s)
			if err != nil {
				if !strings.HasPrefix(err.Error(), fmt.Sprintf("%s-all %q: ", flagOfKind("env-from", kind), s)) {
					t.Errorf("ParseEnvAll(%s, %q) error %q does not name the flag and value", kind, s, err)
				}
				continue
			}
			back := e.Name
			switch {
			case e.Remove:
				back += "-"
			case e.Prefix != "":
				back += ":" + e.Prefix
			}
			if back != s || e.Kind != kind {
				t.Errorf("ParseEnvAll(%s, %q) = %+v does not read back", kind, s, e)
			}
		}
		if p, err := ParsePullSecret(s); err != nil && !strings.HasPrefix(err.Error(), fmt.Sprintf("--pull-secret %q: ", s)) {
			t.Errorf("ParsePullSecret(%q) error %q does not name the flag and value", s, err)
		} else if err == nil && p.Name+map[bool]string{true: "-"}[p.Remove] != s {
			t.Errorf("ParsePullSecret(%q) = %+v does not read back", s, p)
		}
	})
}

// FuzzSplitCause checks that the server's field errors come apart into
// the value the user gave and what is wrong with it, whatever they hold.
func FuzzSplitCause(f *testing.F) {
	for _, s := range [][2]string{{"SIN", "city SIN is not enabled for this project"}, {"", "must be a fully qualified image"},
		{"a: \"b\"", "x: y"}, {"dfw-a", ""}, {"\x00", "\\"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, value, detail string) {
		causes := invalid(field.ErrorList{field.Invalid(field.NewPath("spec", "x"), value, detail)})
		bad, got := splitCause(causes[0])
		if bad != value {
			t.Errorf("splitCause(%q) gives the value %q, want %q", causes[0].Message, bad, value)
		}
		if want := cmp.Or(detail, causes[0].Message); got != want {
			t.Errorf("splitCause(%q) gives the detail %q, want %q", causes[0].Message, got, want)
		}
	})
}
