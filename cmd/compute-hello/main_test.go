package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTheDemoAnswersWithItsHostCityEnvAndFile(t *testing.T) {
	t.Setenv("COMPUTE_CITY_CODE", "DFW")
	t.Setenv("GREETING", "howdy")
	file := filepath.Join(t.TempDir(), "motd")
	if err := os.WriteFile(file, []byte("from a mounted secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	for _, tc := range []struct{ path, want string }{
		{"/", "hello from " + host + " in DFW\n"},
		{"/?env=GREETING", "GREETING=howdy\n"},
		{"/?file=" + file, file + ":\nfrom a mounted secret\n"},
		{"/healthz", "ok\n"},
	} {
		rec := httptest.NewRecorder()
		handler().ServeHTTP(rec, httptest.NewRequest("GET", tc.path, nil))
		body, _ := io.ReadAll(rec.Result().Body)
		if rec.Code != 200 || !strings.Contains(string(body), tc.want) {
			t.Errorf("GET %s: %d %q, want 200 containing %q", tc.path, rec.Code, body, tc.want)
		}
	}
}

func TestTheCityFallsBackToCITYThenSaysItIsUnknown(t *testing.T) {
	t.Setenv("COMPUTE_CITY_CODE", "")
	t.Setenv("CITY", "")
	if got := city(); got != "an unknown city" {
		t.Errorf("city() = %q with nothing set", got)
	}
	t.Setenv("CITY", "LHR")
	if got := city(); got != "LHR" {
		t.Errorf("city() = %q with CITY=LHR", got)
	}
}

func TestBurnAnswersAtOnceAndRefusesWhatIsUnbounded(t *testing.T) {
	h := handler()
	for _, tc := range []struct {
		path     string
		wantCode int
		want     string
	}{
		{"/burn?seconds=1", http.StatusAccepted, "burning 1 core(s) for 1s"},
		{"/burn?seconds=1&cores=2", http.StatusAccepted, "burning 2 core(s) for 1s"},
		{"/burn?seconds=601", http.StatusBadRequest, "seconds must be a whole number from 1 to 600"},
		{"/burn?seconds=0", http.StatusBadRequest, "seconds must be"},
		{"/burn?seconds=ten", http.StatusBadRequest, "seconds must be"},
		{"/burn?seconds=1&cores=17", http.StatusBadRequest, "cores must be a whole number from 1 to 16"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", tc.path, nil))
		body, _ := io.ReadAll(rec.Result().Body)
		if rec.Code != tc.wantCode || !strings.Contains(string(body), tc.want) {
			t.Errorf("GET %s: %d %q, want %d containing %q", tc.path, rec.Code, body, tc.wantCode, tc.want)
		}
	}
}

func TestBurnRefusesMoreCoresThanItsBound(t *testing.T) {
	b := &burner{}
	first := httptest.NewRecorder()
	b.ServeHTTP(first, httptest.NewRequest("GET", "/burn?seconds=1&cores=16", nil))
	second := httptest.NewRecorder()
	b.ServeHTTP(second, httptest.NewRequest("GET", "/burn?seconds=1&cores=1", nil))
	if first.Code != http.StatusAccepted || second.Code != http.StatusTooManyRequests {
		t.Errorf("16 cores then 1 more: %d then %d, want 202 then 429", first.Code, second.Code)
	}
}

func TestEatTakesTheMemoryItIsAskedFor(t *testing.T) {
	hold := eatHold
	eatHold = nil
	defer func() { eatHold = hold }()
	var out strings.Builder
	eatMemory(8, &out)
	if eatMiB != 8 || !strings.Contains(out.String(), "holds 8 MiB") {
		t.Fatalf("took %d MiB, said %q", eatMiB, out.String())
	}
}
