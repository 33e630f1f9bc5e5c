package platform

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestEveryPlaneGetsOverlaysThatExist: each role's overlays are directories
// of config/overlays with a kustomization, and every plane that runs a
// compute process gets the overlay creating that process's ServiceAccount.
func TestEveryPlaneGetsOverlaysThatExist(t *testing.T) {
	repo, err := findRepo("")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		RoleProject:  {identityNamespace + "/" + managerServiceAccount, identityNamespace + "/" + quotaServiceAccount},
		RoleHub:      {identityNamespace + "/" + federationServiceAccount},
		RoleCell:     {identityNamespace + "/" + managerServiceAccount},
		roleNodeCell: {identityNamespace + "/" + managerServiceAccount},
	}
	for role, accounts := range want {
		var got []string
		for _, o := range overlaysOf(role) {
			if _, err := os.Stat(filepath.Join(repo, "config", "overlays", o.overlay, "kustomization.yaml")); err != nil {
				t.Errorf("%s planes get config/overlays/%s: %v", role, o.overlay, err)
			}
			got = append(got, o.accounts...)
		}
		for _, sa := range accounts {
			if !slices.Contains(got, sa) {
				t.Errorf("no overlay of %s planes is expected to create ServiceAccount %s", role, sa)
			}
		}
	}
}
