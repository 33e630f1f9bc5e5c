package main

import (
	"io"
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
