package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestExitCode(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want int
	}{
		"no error is success":                   {nil, ExitOK},
		"a plain error is a failure":            {errors.New("boom"), ExitFailure},
		"a usage error exits 2":                 {UsageErrorf("bad flag"), ExitUsage},
		"a pending error exits 3":               {PendingErrorf("activating"), ExitPending},
		"a wrapped usage error keeps its code":  {fmt.Errorf("context: %w", UsageErrorf("bad")), ExitUsage},
		"hints keep the code of the error":      {WithHints(PendingErrorf("later"), "wait"), ExitPending},
		"hints on a plain error make a failure": {WithHints(errors.New("boom"), "fix it"), ExitFailure},
		"Ctrl-C exits 130":                      {fmt.Errorf("get: %w", ErrInterrupted), ExitInterrupted},
	} {
		t.Run(name, func(t *testing.T) {
			if got := ExitCode(tc.err); got != tc.want {
				t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestPrintErrorShowsTheFixBelowTheMessage(t *testing.T) {
	var b strings.Builder
	PrintError(&b, WithHints(errors.New("workload \"web\" not found"), "List the workloads with: datumctl compute workloads"))
	want := "Error: workload \"web\" not found\n  → List the workloads with: datumctl compute workloads\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Error(diff)
	}
}

func TestHumanize(t *testing.T) {
	for in, want := range map[string]string{
		"ImageUnavailable":           "image unavailable",
		"QuotaExceeded":              "quota exceeded",
		"QuotaProjectIDUnresolvable": "quota project id unresolvable",
		"Available":                  "available",
		"":                           "",
	} {
		if got := Humanize(in); got != want {
			t.Errorf("Humanize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAgeIsRelativeAsKubectlShowsIt(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for created, want := range map[time.Time]string{
		now.Add(-90 * time.Minute): "90m",
		now.Add(-50 * time.Hour):   "2d2h",
		{}:                         "<unknown>",
	} {
		if got := Age(created, now); got != want {
			t.Errorf("Age(%s) = %q, want %q", created, got, want)
		}
	}
}

func TestTablesAlignByDisplayWidth(t *testing.T) {
	tbl := NewTable("NAME", "NOTE")
	tbl.AddRow("東京-web", "wide runes take two columns")
	tbl.AddRow("café", "a combining accent takes none")
	tbl.AddRow("🚀-app", "so does an emoji")
	var b strings.Builder
	if err := tbl.Render(&b, true, 0); err != nil {
		t.Fatal(err)
	}
	var col []int
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		i := strings.Index(line, "  ")
		for i < len(line) && line[i] == ' ' {
			i++
		}
		col = append(col, DisplayWidth(line[:i]))
	}
	for i, c := range col {
		if c != col[0] {
			t.Errorf("line %d: the second column starts at display column %d, not %d:\n%s", i, c, col[0], b.String())
		}
	}
	if got := Truncate("東京東京", 5); got != "東京…" || DisplayWidth(got) > 5 {
		t.Errorf("Truncate by display width = %q", got)
	}
}

func TestIsCityCode(t *testing.T) {
	for in, want := range map[string]bool{"DFW": true, "dfw": false, "DF": false, "DFWX": false, "D1W": false} {
		if got := IsCityCode(in); got != want {
			t.Errorf("IsCityCode(%q) = %v", in, got)
		}
	}
}

func TestTableFitsTheTerminalByCuttingFlexibleColumns(t *testing.T) {
	tb := NewTable("NAME", "STATUS~")
	tb.AddRow("web-dfw-0", "Pending (quota exceeded): the project uses 10 of its 10 instances")
	tb.AddRow("web-lhr-0", "Available\x1b[31m")
	var b strings.Builder
	if err := tb.Render(&b, true, 36); err != nil {
		t.Fatal(err)
	}
	want := "NAME        STATUS\n" +
		"web-dfw-0   Pending (quota exceeded…\n" +
		"web-lhr-0   Available^[[31m\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("terminal table (-want +got):\n%s", diff)
	}

	b.Reset()
	if err := tb.Render(&b, false, 36); err != nil {
		t.Fatal(err)
	}
	want = "NAME        STATUS\n" +
		"web-dfw-0   Pending (quota exceeded): the project uses 10 of its 10 instances\n" +
		"web-lhr-0   Available^[[31m\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("a pipe gets the aligned table with complete values (-want +got):\n%s", diff)
	}
}

func TestLiveRedrawsOnATerminalAndWritesChangesToAPipe(t *testing.T) {
	var pipe strings.Builder
	l := NewLive(&pipe, false, 0)
	l.Update([]string{"frame"}, "DFW 0/2 starting")
	l.Update([]string{"frame"}, "DFW 0/2 starting")
	l.Update([]string{"frame"}, "DFW 2/2 ready")
	if want := "DFW 0/2 starting\nDFW 2/2 ready\n"; pipe.String() != want {
		t.Errorf("pipe got %q, want %q", pipe.String(), want)
	}

	var term strings.Builder
	l = NewLive(&term, true, 80)
	l.Update([]string{"a", "b"}, "")
	l.Update([]string{"c"}, "")
	if want := "a\nb\n\x1b[2A\r\x1b[Jc\n"; term.String() != want {
		t.Errorf("terminal got %q, want %q", term.String(), want)
	}
}

func TestPluginContextBuildsTheProjectControlPlaneURL(t *testing.T) {
	for name, tc := range map[string]struct {
		host, want string
	}{
		"a bare host gets https": {"api.datum.net", "https://api.datum.net/apis/resourcemanager.miloapis.com/v1alpha1/projects/p1/control-plane"},
		"a scheme is kept":       {"http://127.0.0.1:8080/", "http://127.0.0.1:8080/apis/resourcemanager.miloapis.com/v1alpha1/projects/p1/control-plane"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := (PluginContext{APIHost: tc.host}).ServerURL("p1"); got != tc.want {
				t.Errorf("got %s", got)
			}
		})
	}
}

func TestTheCredentialsHelperIsAskedOnceWithTheSession(t *testing.T) {
	var calls [][]string
	run := func(_ context.Context, name string, args ...string) ([]byte, error) {
		calls = append(calls, append([]string{name}, args...))
		return []byte("tok-123\n"), nil
	}
	ts := &TokenSource{Context: PluginContext{CredentialsHelper: "/usr/bin/datumctl", Session: "work"}, Run: run}
	for range 2 {
		tok, err := ts.Token(context.Background())
		if err != nil || tok != "tok-123" {
			t.Fatalf("Token() = %q, %v", tok, err)
		}
	}
	want := [][]string{{"/usr/bin/datumctl", "auth", "get-token", "--session", "work"}}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("helper calls (-want +got):\n%s", diff)
	}
	if args := (PluginContext{}).HelperArgs(); strings.Join(args, " ") != "auth get-token" {
		t.Errorf("without a session the helper gets no --session: %v", args)
	}
}

func TestAFailingHelperSaysHowToLogIn(t *testing.T) {
	ts := &TokenSource{Context: PluginContext{CredentialsHelper: "datumctl"},
		Run: func(context.Context, string, ...string) ([]byte, error) {
			return nil, errors.New("exit status 1: not logged in")
		}}
	_, err := ts.Token(context.Background())
	var b strings.Builder
	PrintError(&b, err)
	if !strings.Contains(b.String(), "not logged in") || !strings.Contains(b.String(), "datumctl login") || strings.Contains(b.String(), "auth login") {
		t.Errorf("got %s", b.String())
	}
}

func TestRequestsCarryTheTokenAndA401IsRetriedOnceWithAFreshOne(t *testing.T) {
	for name, tc := range map[string]struct {
		// rejected is how many requests the server answers 401 first.
		rejected   int
		wantStatus []int
		wantAuth   []string
	}{
		"an expired token is replaced and the request sent again": {1,
			[]int{200, 200}, []string{"Bearer tok-1", "Bearer tok-2", "Bearer tok-2"}},
		"a fresh token that is rejected too is the answer": {2,
			[]int{401, 200}, []string{"Bearer tok-1", "Bearer tok-2", "Bearer tok-3"}},
	} {
		t.Run(name, func(t *testing.T) {
			var seen []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen = append(seen, r.Header.Get("Authorization"))
				if len(seen) <= tc.rejected {
					w.WriteHeader(http.StatusUnauthorized)
				}
			}))
			defer srv.Close()
			n := 0
			ts := &TokenSource{Context: PluginContext{CredentialsHelper: "datumctl"}, Run: func(context.Context, string, ...string) ([]byte, error) {
				n++
				return fmt.Appendf(nil, "tok-%d", n), nil
			}}
			client := &http.Client{Transport: WrapTransport(ts)(http.DefaultTransport)}
			var status []int
			for range 2 {
				resp, err := client.Get(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				status = append(status, resp.StatusCode)
				_ = resp.Body.Close()
			}
			if diff := cmp.Diff(tc.wantStatus, status); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAuth, seen); diff != "" {
				t.Errorf("Authorization headers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOutputFlagsTakeKubectlsFormats(t *testing.T) {
	for name, tc := range map[string]struct {
		flags   *OutputFlags
		format  string
		wantErr bool
	}{
		"table":                           {NewOutputFlags(), "table", false},
		"json":                            {NewOutputFlags(), "json", false},
		"yaml":                            {NewOutputFlags(), "yaml", false},
		"name for API objects":            {NewObjectOutputFlags(), "name", false},
		"name is refused for a view":      {NewOutputFlags(), "name", true},
		"jsonpath":                        {NewOutputFlags(), "jsonpath={.items[*].metadata.name}", false},
		"jsonpath without braces":         {NewObjectOutputFlags(), "jsonpath=.metadata.name", false},
		"jsonpath-as-json":                {NewObjectOutputFlags(), "jsonpath-as-json={.metadata}", false},
		"go-template":                     {NewObjectOutputFlags(), "go-template={{.metadata.name}}", false},
		"a jsonpath that does not parse":  {NewObjectOutputFlags(), "jsonpath={.items[", true},
		"a template that does not parse":  {NewObjectOutputFlags(), "go-template={{.metadata.name", true},
		"an empty template":               {NewObjectOutputFlags(), "go-template=", true},
		"a template file that is missing": {NewObjectOutputFlags(), "go-template-file=/nonexistent", true},
		"wide is not there yet":           {NewObjectOutputFlags(), "wide", true},
		"an unknown format":               {NewObjectOutputFlags(), "xml", true},
	} {
		t.Run(name, func(t *testing.T) {
			tc.flags.Format = tc.format
			err := tc.flags.Validate()
			if (err != nil) != tc.wantErr || (err != nil && ExitCode(err) != ExitUsage) {
				t.Errorf("-o %s: err = %v", tc.format, err)
			}
		})
	}
}

func TestViewsPrintThroughTemplates(t *testing.T) {
	v := struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Name       string `json:"name"`
		Cities     []struct {
			City string `json:"city"`
		} `json:"cities"`
	}{APIVersion: ViewAPIVersion, Kind: "WorkloadStatus", Name: "web", Cities: []struct {
		City string `json:"city"`
	}{{"DFW"}, {"LHR"}}}
	for format, want := range map[string]string{
		"jsonpath={.name}: {.cities[*].city}":                     "web: DFW LHR",
		"go-template={{.name}}{{range .cities}} {{.city}}{{end}}": "web DFW LHR",
	} {
		var b strings.Builder
		if err := PrintView(&b, format, v); err != nil || strings.TrimSpace(b.String()) != want {
			t.Errorf("-o %s = %q, %v; want %q", format, b.String(), err, want)
		}
	}
}
