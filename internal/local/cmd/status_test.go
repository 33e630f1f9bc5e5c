//go:build linux

package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/citycells/compute/internal/local/platform"
)

func TestStatusSaysWhenTheIdentityTokensExpireAndWhetherTheyAreRefreshed(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		report platform.StatusReport
		want   string
	}{
		"refreshed tokens": {
			platform.StatusReport{IdentityTokensExpire: now.Add(72 * time.Hour), IdentityTokensRefreshed: true},
			"(in 72h0m0s); the link proxy and `compute-local up` refresh them",
		},
		"tokens in the kubeconfigs": {
			platform.StatusReport{IdentityTokensExpire: now.Add(time.Hour)},
			"are not refreshed",
		},
		"expired tokens": {
			platform.StatusReport{IdentityTokensExpire: now.Add(-time.Hour), IdentityTokensRefreshed: true},
			"EXPIRED",
		},
		"the admin identities": {platform.StatusReport{}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			printTokens(&out, &tc.report, now)
			if tc.want == "" && out.Len() > 0 || !strings.Contains(out.String(), tc.want) {
				t.Errorf("printTokens() = %q, want it to say %q", out.String(), tc.want)
			}
		})
	}
}
