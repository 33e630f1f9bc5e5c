//go:build linux

package platform

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/citycells/compute/internal/planes"
)

// The quota service of the platform: compute-quota, one per project plane,
// playing Milo's part (it grants ResourceClaims against the project's
// ResourceGrants, and creates the compute ResourceRegistrations and a default
// grant). The cells reach every project's quota plane through one kubeconfig
// with a context per project, authenticating as quotaCellUser.
const (
	// quotaBinaryName is compute-quota's executable name; it is built with
	// compute-manager and found next to it.
	quotaBinaryName = "compute-quota"
	// componentQuotaPrefix prefixes the quota service's component name:
	// compute-quota-<project plane>.
	componentQuotaPrefix = "compute-quota-"
	// quotaKubeconfigFile is the kubeconfig, in the state directory, the
	// cells' compute-managers reach the projects' quota planes with: one
	// context per project, named after the project.
	quotaKubeconfigFile = "quota.kubeconfig"
	// quotaCellUser is the identity of the cells in the quota planes; RBAC
	// lets it manage ResourceClaims and nothing else.
	quotaCellUser = "compute-cell-quota"
)

// compute-manager's quota flags of the cell role.
const (
	flagQuotaKubeconfig = "quota-kubeconfig"
	flagCellName        = "cell-name"
)

// QuotaGrant is the default grant of every project of the platform. Zero
// fields keep compute-quota's defaults (10 instances, 40 vCPU, 80 GiB).
type QuotaGrant struct {
	// Instances is the number of Instances; zero means the default.
	Instances int64
	// VCPU is a quantity of vCPU ("40", "500m").
	VCPU string
	// Memory is a quantity of memory ("80Gi").
	Memory string
}

// validate checks the amounts, naming what is wrong.
func (g QuotaGrant) validate() error {
	if g.Instances < 0 {
		return fmt.Errorf("the default quota grant of %d instances is negative", g.Instances)
	}
	for _, a := range []struct{ what, q string }{{"vCPU", g.VCPU}, {"memory", g.Memory}} {
		if a.q == "" {
			continue
		}
		if v, err := resource.ParseQuantity(a.q); err != nil || v.Sign() < 0 {
			return fmt.Errorf("the default quota grant's %s %q is not a non-negative quantity (like 40, 500m, 80Gi)", a.what, a.q)
		}
	}
	return nil
}

// quotaArgs are compute-quota's flags for a project plane: the project's
// default grant, in BindingNamespace (the namespace Workloads start in; the
// service counts a project's claims from every namespace against it), and
// leader election when it is replicated.
func quotaArgs(project, kubeconfig string, grant QuotaGrant, ports managerPorts, leaderElect bool) []string {
	flags := map[string]string{
		"kubeconfig":                kubeconfig,
		"project":                   project,
		"grant-namespace":           BindingNamespace,
		"metrics-bind-address":      hostPort(ports.metrics),
		"health-probe-bind-address": hostPort(ports.probe),
		// compute-quota also plays the service catalog here, so the CLI can
		// request compute for the project.
		"activate-entitlements": "true",
	}
	maps.Copy(flags, leaderElectionArgs(leaderElect))
	if grant.Instances > 0 {
		flags["default-instances"] = strconv.FormatInt(grant.Instances, 10)
	}
	if grant.VCPU != "" {
		flags["default-vcpus"] = grant.VCPU
	}
	if grant.Memory != "" {
		flags["default-memory"] = grant.Memory
	}
	return planes.FlagList(flags)
}

// quotaManagerArgs are the cell role's quota flags: the quota kubeconfig and
// the cell's name (its plane's, also its Karmada Cluster's), passed only
// when the quota service runs and the binary has both flags; otherwise the
// cell runs with quota disabled, as compute-manager logs.
func quotaManagerArgs(r managerRole, flags managerFlags) map[string]string {
	if !r.cell || r.quotaKubeconfig == "" || !flags[flagQuotaKubeconfig] || !flags[flagCellName] {
		return nil
	}
	return map[string]string{flagQuotaKubeconfig: r.quotaKubeconfig, flagCellName: r.plane}
}

// buildArgs are the go command's arguments that build compute-manager to
// bin and, when the repository has it, compute-quota next to it: one build,
// so the two share the compile work.
func buildArgs(repo, bin string) []string {
	args := []string{"build", "-o", filepath.Dir(bin) + string(filepath.Separator), "./cmd/" + managerBinaryName}
	if _, err := os.Stat(filepath.Join(repo, "cmd", quotaBinaryName, "main.go")); err == nil {
		args = append(args, "./cmd/"+quotaBinaryName)
	}
	return args
}

// quotaBinary returns compute-quota next to the compute-manager binary (the
// build makes both), or why there is none.
func quotaBinary(managerBinary string) (string, string) {
	bin := filepath.Join(filepath.Dir(managerBinary), quotaBinaryName)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Sprintf("no %s next to %s (go build -o %s/ ./cmd/%s): the cells run without quota",
			quotaBinaryName, managerBinary, filepath.Dir(managerBinary), quotaBinaryName)
	}
	return bin, ""
}

// startQuota starts compute-quota against every project plane and writes
// the cells' quota kubeconfigs. It reports whether compute-quota runs; when
// there is no compute-quota binary it is recorded as skipped and the cells
// run with quota disabled.
func (p *Platform) startQuota(ctx context.Context, managerBinary string) (bool, error) {
	bin, why := quotaBinary(managerBinary)
	if bin == "" {
		p.skip(componentQuotaPrefix+"*", why)
		return false, nil
	}
	began := time.Now()
	if err := p.ensureLeaseNamespaces(ctx); err != nil {
		return false, err
	}
	replicas := p.cfg.Replicas
	free, err := planes.FreePorts(2 * replicas * len(p.cfg.Projects))
	if err != nil {
		return false, err
	}
	g, gctx := errgroup.WithContext(ctx)
	for i, project := range p.cfg.Projects {
		plane := ProjectPlane(project)
		kubeconfig := p.env.Plane(plane).KubeconfigPath()
		if p.ids != nil {
			kubeconfig = p.ids.quota[plane]
		}
		if p.ids == nil {
			if err := p.allowCellClaims(ctx, plane); err != nil {
				return false, err
			}
		}
		for k := range replicas {
			n := i*replicas + k
			ports := managerPorts{metrics: free[2*n], probe: free[2*n+1]}
			g.Go(func() error {
				return p.startComponent(gctx, planes.ComponentSpec{
					Name: replicaName(componentQuotaPrefix+plane, k), Plane: plane, Binary: bin,
					Args: quotaArgs(project, kubeconfig, p.cfg.QuotaGrant, ports, p.cfg.leaderElect()), Port: ports.probe,
				}, "http://"+hostPort(ports.probe)+"/readyz", false)
			})
		}
	}
	if err := g.Wait(); err != nil {
		return false, err
	}
	// One kubeconfig reaching every project directly, for people, and one
	// per cell through the cell's links, for its compute-manager.
	write := func(path, cell string) error { return p.writeQuotaKubeconfig(path, cell) }
	if p.ids != nil {
		write = func(path, cell string) error { return p.writeCellQuotaKubeconfig(ctx, path, cell) }
	}
	if err := write(filepath.Join(p.cfg.StateDir, quotaKubeconfigFile), ""); err != nil {
		return false, err
	}
	for _, city := range p.cfg.Cities {
		if err := write(p.cellQuotaKubeconfig(city), CellPlane(city)); err != nil {
			return false, err
		}
	}
	p.timing("compute-quota", began)
	return true, nil
}

// cellQuotaKubeconfig is the path of the quota kubeconfig of a cell's
// compute-manager.
func (p *Platform) cellQuotaKubeconfig(city string) string {
	return filepath.Join(p.cfg.StateDir, "links", CellPlane(city)+"-quota.kubeconfig")
}

// allowCellClaims lets quotaCellUser manage ResourceClaims in a project
// plane: what a cell needs (create, read, delete, and list and watch for
// the claim watch), and no more.
func (p *Platform) allowCellClaims(ctx context.Context, plane string) error {
	c, err := newClient(p.env.Plane(plane))
	if err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: quotaCellUser}}
	if _, err := createOrUpdate(ctx, c, role, func() {
		role.Rules = []rbacv1.PolicyRule{{
			APIGroups: []string{"quota.miloapis.com"},
			Resources: []string{"resourceclaims"},
			Verbs:     []string{"get", "list", "watch", "create", "delete"},
		}}
	}); err != nil {
		return fmt.Errorf("failed to create ClusterRole %s in %s: %w", quotaCellUser, plane, err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: quotaCellUser}}
	if _, err := createOrUpdate(ctx, c, binding, func() {
		binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: quotaCellUser}
		binding.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: quotaCellUser}}
	}); err != nil {
		return fmt.Errorf("failed to create ClusterRoleBinding %s in %s: %w", quotaCellUser, plane, err)
	}
	return nil
}

// writeQuotaKubeconfig writes a cells' quota kubeconfig: a context per
// project, named after it, reaching its project plane as quotaCellUser —
// through the links of cell when it is set. It has no current context, so
// a project without a plane is not found rather than sent to another
// project's plane.
func (p *Platform) writeQuotaKubeconfig(path, cell string) error {
	out := clientcmdapi.NewConfig()
	for _, project := range p.cfg.Projects {
		plane := ProjectPlane(project)
		data, err := p.env.Plane(plane).ClientKubeconfig(quotaCellUser)
		if err != nil {
			return fmt.Errorf("failed to mint the quota identity of the cells for %s: %w", plane, err)
		}
		if err := addQuotaContext(out, project, plane, data); err != nil {
			return err
		}
		if cell != "" {
			out.Clusters[plane].Server = p.linkURL(cell, plane)
		}
	}
	data, err := clientcmd.Write(*out)
	if err != nil {
		return fmt.Errorf("failed to render %s: %w", path, err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return nil
}

// addQuotaContext adds the current context of a plane's kubeconfig to out
// as context project, with its cluster and user renamed after the plane.
func addQuotaContext(out *clientcmdapi.Config, project, plane string, kubeconfig []byte) error {
	in, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return fmt.Errorf("failed to read the kubeconfig of %s: %w", plane, err)
	}
	ctx, ok := in.Contexts[in.CurrentContext]
	if !ok || in.Clusters[ctx.Cluster] == nil || in.AuthInfos[ctx.AuthInfo] == nil {
		return errors.New("the kubeconfig of " + plane + " has no usable current context")
	}
	user := quotaCellUser + "@" + plane
	out.Clusters[plane] = in.Clusters[ctx.Cluster]
	out.AuthInfos[user] = in.AuthInfos[ctx.AuthInfo]
	out.Contexts[project] = &clientcmdapi.Context{Cluster: plane, AuthInfo: user}
	return nil
}
