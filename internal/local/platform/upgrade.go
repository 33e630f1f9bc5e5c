//go:build linux

package platform

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/citycells/compute/internal/planes"
)

// BuildManager builds compute-manager (and compute-quota, next to it) from
// the repository repo into dir and returns compute-manager's path.
func BuildManager(ctx context.Context, repo, dir string) (string, error) {
	bin := filepath.Join(dir, managerBinaryName)
	cmd := exec.CommandContext(ctx, "go", buildArgs(repo, bin)...)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %s failed: %w\n%s", repo, err, out)
	}
	return bin, nil
}

// Upgrade replaces compute on the running platform as an operator upgrades
// it, keeping every plane, Karmada and the data: it applies repo's CRDs to
// every plane, its interpreter to the federation plane and its overlays'
// identities and RBAC, restarts every compute-manager and compute-quota
// process, one after another, on binary with the command line it was
// started with, and publishes its InstanceType catalog (to the project
// planes and, for the cells, the federation plane).
// The e2e upgrade test starts the platform from an earlier commit's tree
// and binary and calls Upgrade with the current ones.
func (p *Platform) Upgrade(ctx context.Context, repo, binary string) error {
	return p.swapRelease(ctx, repo, binary, false)
}

// Downgrade goes back to an earlier release, repo's, as Upgrade goes
// forward, except that the earlier release's interpreter goes in last, once
// Karmada has applied every Work again: the later interpreter reads what
// both releases' cells report (the upgrade runs it over the earlier cells),
// and it keeps a WorkloadDeployment's status while the restarted managers'
// writes make Karmada retry an apply, where the earlier one forgets it.
func (p *Platform) Downgrade(ctx context.Context, repo, binary string) error {
	return p.swapRelease(ctx, repo, binary, true)
}

// swapRelease installs repo's release and runs binary; interpreterLast
// installs the interpreter after the managers, once the Works settled.
func (p *Platform) swapRelease(ctx context.Context, repo, binary string, interpreterLast bool) error {
	if _, err := os.Stat(binary); err != nil {
		return fmt.Errorf("the new compute-manager binary: %w", err)
	}
	began := time.Now()
	p.repo = repo
	if err := p.upgradeCRDs(ctx); err != nil {
		return err
	}
	hub, err := newClient(p.env.Plane(HubPlane))
	if err != nil {
		return err
	}
	if !interpreterLast {
		if err := p.installInterpreter(ctx, hub); err != nil {
			return err
		}
	}
	if err := p.installIdentities(ctx); err != nil {
		return err
	}
	if err := p.swapManagers(ctx, binary); err != nil {
		return err
	}
	if interpreterLast {
		p.waitWorksSettled(ctx, hub)
		if err := p.installInterpreter(ctx, hub); err != nil {
			return err
		}
	}
	// The catalog last: the new managers serve its admission webhook.
	if err := p.publishInstanceTypes(ctx, hub); err != nil {
		return err
	}
	p.progress.linef("upgraded compute to %s (CRDs, interpreter, catalog and RBAC of %s) in %s", binary, repo, since(began))
	return nil
}

// swapManagers restarts every compute-manager and compute-quota process,
// one after another, on binary (compute-quota on the one next to it).
func (p *Platform) swapManagers(ctx context.Context, binary string) error {
	for _, c := range p.State().Components {
		if !strings.HasPrefix(c.Name, componentManagerPrefix) && !strings.HasPrefix(c.Name, componentQuotaPrefix) {
			continue
		}
		bin := binary
		if strings.HasPrefix(c.Name, componentQuotaPrefix) {
			var why string
			if bin, why = quotaBinary(binary); bin == "" {
				return fmt.Errorf("cannot upgrade %s: %s", c.Name, why)
			}
		}
		if err := p.StopComponent(c.Name, StopOptions{}); err != nil {
			return fmt.Errorf("failed to stop %s for the upgrade: %w", c.Name, err)
		}
		p.replaceBinary(c.Name, bin)
		if err := p.StartComponent(ctx, c.Name); err != nil {
			return fmt.Errorf("failed to start %s on %s: %w", c.Name, bin, err)
		}
	}
	return nil
}

// Settling: Karmada has applied every Work and none changed for
// worksQuiet, or worksSettleLimit passed (then the swap goes on, saying so).
const (
	worksQuiet       = 3 * time.Second
	worksSettleLimit = time.Minute
)

// waitWorksSettled waits until every Work of the federation plane is
// Applied and none changed for worksQuiet, at most worksSettleLimit.
func (p *Platform) waitWorksSettled(ctx context.Context, hub client.Client) {
	began := time.Now()
	last, quietSince := "", time.Now()
	for time.Since(began) < worksSettleLimit && ctx.Err() == nil {
		works := &unstructured.UnstructuredList{}
		works.SetGroupVersionKind(schema.GroupVersionKind{Group: "work.karmada.io", Version: "v1alpha1", Kind: "WorkList"})
		if err := hub.List(ctx, works); err == nil {
			state, applied := worksState(works.Items)
			if state != last {
				last, quietSince = state, time.Now()
			}
			if applied && time.Since(quietSince) >= worksQuiet {
				p.progress.linef("Karmada applied every Work, none changed for %s (%s)", worksQuiet, since(began))
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	p.progress.linef("Works had not settled after %s: going on", since(began))
}

// worksState is the Works' names and resourceVersions, and whether every
// one is Applied.
func worksState(works []unstructured.Unstructured) (string, bool) {
	var b strings.Builder
	applied := true
	for _, w := range works {
		fmt.Fprintf(&b, "%s/%s@%s ", w.GetNamespace(), w.GetName(), w.GetResourceVersion())
		conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
		ok := false
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Applied" && m["status"] == "True" {
				ok = true
			}
		}
		applied = applied && ok
	}
	return b.String(), applied
}

// upgradeCRDs applies the repository's CRDs to every plane: compute's
// everywhere, the external contracts' where the platform installs them.
func (p *Platform) upgradeCRDs(ctx context.Context) error {
	computeCRDs := filepath.Join(p.repo, "config", "crd", "bases")
	externalCRDs := filepath.Join(p.repo, "config", "crd", "external")
	for _, rec := range p.State().Planes {
		dirs := []string{computeCRDs}
		if rec.Role == RoleProject || (rec.Role == RoleCell && p.cfg.networkingIntegration()) {
			dirs = append(dirs, externalCRDs)
		}
		crds, err := planes.ReadCRDs(dirs...)
		if err != nil {
			return err
		}
		if err := planes.InstallCRDs(ctx, p.env.Plane(rec.Name).Config(), crds); err != nil {
			return fmt.Errorf("failed to upgrade the CRDs of %s: %w", rec.Name, err)
		}
	}
	return nil
}

// replaceBinary records binary as the executable of component name, for
// its next start.
func (p *Platform) replaceBinary(name, binary string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.state.Components {
		if c := &p.state.Components[i]; c.Name == name && len(c.Args) > 0 {
			c.Args[0], c.Binary = binary, binary
		}
	}
}
