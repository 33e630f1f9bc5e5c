package cmdutil

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// instance returns an Instance named name in city, created at created.
func instance(name, city string, created time.Time, labels map[string]string) computev1alpha.Instance {
	i := computev1alpha.Instance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
		CreationTimestamp: metav1.NewTime(created), Labels: labels}}
	i.Labels = map[string]string{computev1alpha.CityCodeLabel: city}
	for k, v := range labels {
		i.Labels[k] = v
	}
	return i
}

func TestCustomColumnsPrintsAnAlignedTableOfFields(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	list := &computev1alpha.InstanceList{Items: []computev1alpha.Instance{
		instance("web-dfw-0", "DFW", t0, map[string]string{"tier": "front"}),
		instance("api-lhr-12", "LHR", t0.Add(time.Hour), nil),
	}}
	o := &OutputFlags{Format: "custom-columns=NAME:.metadata.name,CITY:{.metadata.labels.compute\\.datumapis\\.com/city-code},TIER:metadata.labels.tier,KIND:.kind",
		Objects: true}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := PrintObject(&b, o.Format, list, NewScheme()); err != nil {
		t.Fatal(err)
	}
	want := "NAME         CITY   TIER     KIND\n" +
		"web-dfw-0    DFW    front    Instance\n" +
		"api-lhr-12   LHR    <none>   Instance\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("custom columns (-want +got):\n%s", diff)
	}

	for format, wantErr := range map[string]string{
		"custom-columns=":                "give the columns as HEADER:FIELD pairs",
		"custom-columns=NAME":            `column "NAME" is not HEADER:FIELD`,
		"custom-columns=NAME:.metadata[": "column NAME:",
	} {
		err := (&OutputFlags{Format: format, Objects: true}).Validate()
		if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("-o %s: got %v, want a usage error saying %q", format, err, wantErr)
		}
	}
	if err := (&OutputFlags{Format: "custom-columns=NAME:.name"}).Validate(); ExitCode(err) != ExitUsage {
		t.Errorf("custom-columns on a computed view: got %v, want a usage error", err)
	}
}

func TestSortByOrdersByTheFieldNumbersAndTimesByValue(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	items := []computev1alpha.Instance{
		instance("b", "LHR", t0.Add(2*time.Hour), nil),
		instance("c", "DFW", t0, nil),
		instance("a", "SIN", t0.Add(time.Hour), nil),
	}
	names := func() string {
		var out []string
		for _, i := range items {
			out = append(out, i.Name)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct{ expr, want string }{
		{".metadata.creationTimestamp", "c,a,b"},
		{"{.metadata.name}", "a,b,c"},
		{".metadata.labels.compute\\.datumapis\\.com/city-code", "c,b,a"},
		{".metadata.missing", "c,b,a"}, // stable: keeps the previous order
	} {
		expr, want := tc.expr, tc.want
		p, err := ParseFieldPath(expr)
		if err != nil {
			t.Fatal(err)
		}
		if err := SortByField(items, p); err != nil {
			t.Fatal(err)
		}
		if got := names(); got != want {
			t.Errorf("--sort-by %s: %s, want %s", expr, got, want)
		}
	}
	if compareValues(int64(9), int64(10)) >= 0 || compareValues(float64(2), int64(10)) >= 0 {
		t.Error("numbers are compared as numbers, not text")
	}
	if compareValues(nil, "a") <= 0 {
		t.Error("a missing value sorts last")
	}
	l := &ListFlags{SortBy: ".metadata["}
	if err := l.Validate(); ExitCode(err) != ExitUsage {
		t.Errorf("a bad --sort-by: got %v, want a usage error", err)
	}
}

func TestADumbTerminalGetsNoCursorMovement(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("no pseudo-terminal available (/dev/ptmx): %v", err)
	}
	defer func() { _ = ptmx.Close(); _ = tty.Close() }()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TERM", "xterm-256color")
	if s := FileIOStreams(tty, tty, tty); !s.OutTerminal || s.Width != 100 {
		t.Fatalf("a terminal is not seen as one: %+v", s)
	}
	t.Setenv("TERM", "dumb")
	s := FileIOStreams(tty, tty, tty)
	if s.OutTerminal || !s.InTerminal {
		t.Fatalf("TERM=dumb: OutTerminal %v (want false: no redraws), InTerminal %v (want true: prompts still work)", s.OutTerminal, s.InTerminal)
	}
	// What commands do with such streams: progress is one line per change.
	var out strings.Builder
	l := NewLive(&out, s.OutTerminal, s.Width)
	l.Update([]string{"DFW 0/2", "LHR 0/2"}, "DFW 0/2 · LHR 0/2")
	l.Update([]string{"DFW 2/2", "LHR 0/2"}, "DFW 2/2 · LHR 0/2")
	if got := out.String(); strings.Contains(got, "\x1b") || got != "DFW 0/2 · LHR 0/2\nDFW 2/2 · LHR 0/2\n" {
		t.Errorf("a dumb terminal got %q", got)
	}

	// A pipe is never a terminal, whatever TERM says.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close(); _ = w.Close() }()
	t.Setenv("TERM", "xterm-256color")
	if s := FileIOStreams(tty, w, w); s.OutTerminal {
		t.Error("a pipe is seen as a terminal")
	}
}
