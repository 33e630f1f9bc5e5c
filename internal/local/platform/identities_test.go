//go:build linux

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

// TestThePlatformInstallsTheCellIsolationPolicies: every kind of the cell
// isolation policies the hub and quota-plane overlays ship is one the
// platform installs from them, so the local cells (and the e2e suites) run
// kept to their own objects, as in an operator's installation.
func TestThePlatformInstallsTheCellIsolationPolicies(t *testing.T) {
	repo, err := findRepo("")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(repo, "config", "rbac", "cell-isolation", "*", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("no config/rbac/cell-isolation/*/*.yaml (%v)", err)
	}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeObjects(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, u := range objs {
			if !slices.Contains(overlayKinds, u.GetKind()) {
				t.Errorf("%s: the platform does not install %s %s (overlayKinds)", f, u.GetKind(), u.GetName())
			}
		}
	}
}
