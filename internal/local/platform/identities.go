//go:build linux

package platform

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/citycells/compute/internal/toolchain"
)

// IdentityMode chooses whom compute's processes authenticate as.
type IdentityMode string

const (
	// IdentitiesOverlay (the default) installs the identities and RBAC of
	// compute's kustomize overlays in every plane — rendered with the
	// pinned kustomize from config/overlays, exactly what an operator
	// installs — and runs every compute-manager and compute-quota with
	// kubeconfigs holding TokenRequest tokens of those ServiceAccounts.
	IdentitiesOverlay IdentityMode = "overlay"
	// IdentitiesAdmin runs them with the planes' admin kubeconfigs, for
	// debugging a problem that is not about permissions.
	IdentitiesAdmin IdentityMode = "admin"
)

// IdentityTokenTTL is how long the ServiceAccount tokens of the overlay
// mode last. Up mints them into token files the kubeconfigs name, and they
// are minted again before they expire (see TokenRefresher).
const IdentityTokenTTL = 7 * 24 * time.Hour

// The identities the overlays create (namespace/name after the overlays'
// namespace and namePrefix transformations). Up fails, naming the overlay,
// when a rendered overlay no longer creates one of them.
const (
	identityNamespace = "compute-system"
	// cellsNamespace holds one ServiceAccount per cell, in the hub and in
	// every quota plane; the overlays bind the namespace's group.
	cellsNamespace = "compute-cells"
	// managerServiceAccount is compute-manager's, in a project plane
	// (management-plane overlay) and in a cell (cell overlay).
	managerServiceAccount = "compute-manager"
	// federationServiceAccount is the management role's in the hub.
	federationServiceAccount = "compute-federation"
	// quotaServiceAccount is compute-quota's, in a quota plane.
	quotaServiceAccount = "compute-quota"
	// peopleQuotaServiceAccount is the identity of quota.kubeconfig, for
	// people: a ServiceAccount of compute-cells, so it holds exactly the
	// cells' rights there.
	peopleQuotaServiceAccount = "local-operator"
)

// identitiesDir is where the overlay mode's kubeconfigs are written.
const identitiesDir = "identities"

// overlayKinds are the kinds of an overlay the platform installs: the
// identities, their RBAC and the admission policies that keep each cell to
// its own objects in the hub and the quota planes. The Deployments,
// Services and webhook registrations are the platform's own processes and
// registrations.
var overlayKinds = []string{
	"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
}

// planeOverlay is one overlay installed in a plane, and the identities it
// must create there.
type planeOverlay struct {
	overlay string
	// only keeps objects whose name contains it (empty: every object).
	only string
	// accounts are namespace/name of the ServiceAccounts it must create.
	accounts []string
}

// roleNodeCell is, for overlaysOf only, a cell whose city has a real node.
const roleNodeCell = "cell-with-node"

// overlaysOf returns the overlays a plane of role gets: a project plane is
// a management plane and its project's quota plane, the hub gets the hub
// overlay, a cell the cell overlay and the dev overlay's simulated
// provider (the local cells run it); a cell with a real node gets the cell
// overlay with the Kubernetes runtime provider instead.
func overlaysOf(role string) []planeOverlay {
	switch role {
	case roleNodeCell:
		return []planeOverlay{{overlay: "cell-kubernetes", accounts: []string{identityNamespace + "/" + managerServiceAccount}}}
	case RoleProject:
		return []planeOverlay{
			{overlay: "management-plane", accounts: []string{identityNamespace + "/" + managerServiceAccount}},
			{overlay: "quota-plane", accounts: []string{identityNamespace + "/" + quotaServiceAccount}},
		}
	case RoleHub:
		return []planeOverlay{{overlay: "hub", accounts: []string{identityNamespace + "/" + federationServiceAccount}}}
	default:
		return []planeOverlay{
			{overlay: "cell", accounts: []string{identityNamespace + "/" + managerServiceAccount}},
			{overlay: "dev", only: "simulated-provider"},
		}
	}
}

// identities are the kubeconfigs of the overlay mode, by process.
type identities struct {
	// manager is each compute-manager's --kubeconfig, by plane.
	manager map[string]string
	// federation is each compute-manager's --federation-kubeconfig, by
	// plane.
	federation map[string]string
	// quota is each compute-quota's --kubeconfig, by project plane.
	quota map[string]string
}

// renderOverlays renders every overlay the planes get with the pinned
// kustomize, keeping overlayKinds.
func (p *Platform) renderOverlays(ctx context.Context) (map[string][]*unstructured.Unstructured, error) {
	bin, err := toolchain.Path(toolchain.Kustomize)
	if err != nil {
		return nil, fmt.Errorf("the overlay identity mode renders config/overlays with kustomize (or run with --identities=admin): %w", err)
	}
	out := map[string][]*unstructured.Unstructured{}
	roles := []string{RoleProject, RoleHub, RoleCell}
	if len(p.cfg.Nodes) > 0 {
		roles = append(roles, roleNodeCell)
	}
	for _, role := range roles {
		for _, o := range overlaysOf(role) {
			if _, done := out[o.overlay]; done {
				continue
			}
			dir := filepath.Join(p.repo, "config", "overlays", o.overlay)
			cmd := exec.CommandContext(ctx, bin, "build", dir)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			data, err := cmd.Output()
			if err != nil {
				return nil, fmt.Errorf("kustomize build %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
			}
			objs, err := decodeObjects(data)
			if err != nil {
				return nil, fmt.Errorf("failed to decode the output of kustomize build %s: %w", dir, err)
			}
			out[o.overlay] = slices.DeleteFunc(objs, func(u *unstructured.Unstructured) bool {
				return !slices.Contains(overlayKinds, u.GetKind())
			})
		}
	}
	return out, nil
}

// installIdentities installs, in every plane, the identities and RBAC of
// its overlays, creates one ServiceAccount per cell in the hub and in every
// quota plane (as docs/install.md tells operators to), and writes each
// process's kubeconfigs with TokenRequest tokens. In the admin mode, and
// when no compute-manager runs, it does nothing.
func (p *Platform) installIdentities(ctx context.Context) error {
	if p.cfg.Identities == IdentitiesAdmin || p.cfg.Managers == ManagersOff {
		return nil
	}
	began := time.Now()
	rendered, err := p.renderOverlays(ctx)
	if err != nil {
		return err
	}
	for _, rec := range p.State().Planes {
		if err := p.installPlaneOverlays(ctx, rec, rendered); err != nil {
			return err
		}
	}
	ids, err := p.writeIdentityKubeconfigs(ctx)
	if err != nil {
		return err
	}
	p.ids = ids
	p.mu.Lock()
	p.state.IdentityTokensExpire = began.Add(IdentityTokenTTL)
	p.mu.Unlock()
	p.progress.linef("installed the overlays' identities and RBAC in every plane; kubeconfigs in %s naming token files of %s ServiceAccount tokens, refreshed before they expire",
		filepath.Join(p.cfg.StateDir, identitiesDir), IdentityTokenTTL)
	p.timing("overlay identities and RBAC", began)
	return nil
}

// installPlaneOverlays applies a plane's overlays (Namespaces first) and
// checks that they created the ServiceAccounts the platform runs as.
func (p *Platform) installPlaneOverlays(ctx context.Context, rec PlaneRecord, rendered map[string][]*unstructured.Unstructured) error {
	c, err := newClient(p.env.Plane(rec.Name))
	if err != nil {
		return err
	}
	role := rec.Role
	if role == RoleCell && p.cfg.hasNode(rec.City) {
		role = roleNodeCell
	}
	for _, o := range overlaysOf(role) {
		objs := slices.DeleteFunc(slices.Clone(rendered[o.overlay]), func(u *unstructured.Unstructured) bool {
			return o.only != "" && !strings.Contains(u.GetName(), o.only)
		})
		slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
			return kindRank(a.GetKind()) - kindRank(b.GetKind())
		})
		for _, u := range objs {
			if err := apply(ctx, c, u); err != nil {
				return fmt.Errorf("installing config/overlays/%s in %s: %w", o.overlay, rec.Name, err)
			}
		}
		for _, sa := range o.accounts {
			if !slices.ContainsFunc(objs, func(u *unstructured.Unstructured) bool {
				return u.GetKind() == "ServiceAccount" && u.GetNamespace()+"/"+u.GetName() == sa
			}) {
				return fmt.Errorf("config/overlays/%s creates no ServiceAccount %s, which the platform runs as in %s", o.overlay, sa, rec.Name)
			}
		}
	}
	// The cells' own identities: one ServiceAccount per cell.
	if rec.Role == RoleHub || rec.Role == RoleProject {
		accounts := []string{}
		for _, city := range p.cfg.Cities {
			accounts = append(accounts, CellPlane(city))
		}
		if rec.Role == RoleProject {
			accounts = append(accounts, peopleQuotaServiceAccount)
		}
		for _, name := range accounts {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: cellsNamespace, Name: name}}
			if err := c.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("failed to create ServiceAccount %s/%s in %s: %w", cellsNamespace, name, rec.Name, err)
			}
		}
	}
	return nil
}

// kindRank orders Namespaces before what lives in them.
func kindRank(kind string) int {
	if kind == "Namespace" {
		return 0
	}
	return 1
}

// writeIdentityKubeconfigs mints a token for every identity a process runs
// as and writes the processes' kubeconfigs. A cell reaches the hub and the
// quota planes through its links, as in the admin mode.
func (p *Platform) writeIdentityKubeconfigs(ctx context.Context) (*identities, error) {
	dir := filepath.Join(p.cfg.StateDir, identitiesDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", dir, err)
	}
	ids := &identities{manager: map[string]string{}, federation: map[string]string{}, quota: map[string]string{}}
	write := func(file, plane, server, namespace, name string) (string, error) {
		kc, err := p.tokenKubeconfig(ctx, strings.TrimSuffix(file, ".kubeconfig")+".token", plane, server, namespace, name)
		if err != nil {
			return "", err
		}
		path := filepath.Join(dir, file)
		if err := clientcmd.WriteToFile(*kc, path); err != nil {
			return "", fmt.Errorf("failed to write %s: %w", path, err)
		}
		return path, nil
	}
	hub := p.env.Plane(HubPlane).URL()
	var err error
	for _, project := range p.cfg.Projects {
		plane := ProjectPlane(project)
		url := p.env.Plane(plane).URL()
		if ids.manager[plane], err = write(componentManagerPrefix+plane+".kubeconfig", plane, url, identityNamespace, managerServiceAccount); err != nil {
			return nil, err
		}
		if ids.federation[plane], err = write(componentManagerPrefix+plane+"-hub.kubeconfig", HubPlane, hub, identityNamespace, federationServiceAccount); err != nil {
			return nil, err
		}
		if ids.quota[plane], err = write(componentQuotaPrefix+plane+".kubeconfig", plane, url, identityNamespace, quotaServiceAccount); err != nil {
			return nil, err
		}
	}
	for _, city := range p.cfg.Cities {
		plane := CellPlane(city)
		if ids.manager[plane], err = write(componentManagerPrefix+plane+".kubeconfig", plane, p.env.Plane(plane).URL(), identityNamespace, managerServiceAccount); err != nil {
			return nil, err
		}
		if ids.federation[plane], err = write(componentManagerPrefix+plane+"-hub.kubeconfig", HubPlane, p.linkURL(plane, HubPlane), cellsNamespace, plane); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// serviceAccountUser is the user name the ServiceAccount namespace/name
// authenticates as.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// tokenKubeconfig returns a kubeconfig reaching server (plane's apiserver,
// or a link to it) as the ServiceAccount namespace/name of plane, through
// the token file tokenFile (in the tokens directory) holding a token from
// the TokenRequest API valid for IdentityTokenTTL.
func (p *Platform) tokenKubeconfig(ctx context.Context, tokenFile, plane, server, namespace, name string) (*clientcmdapi.Config, error) {
	path, err := p.identityToken(ctx, tokenFile, plane, namespace, name)
	if err != nil {
		return nil, err
	}
	user := serviceAccountUser(namespace, name)
	kc := clientcmdapi.NewConfig()
	kc.Clusters[plane] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: p.env.Plane(plane).CAPEM()}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{TokenFile: path}
	kc.Contexts[plane] = &clientcmdapi.Context{Cluster: plane, AuthInfo: user}
	kc.CurrentContext = plane
	return kc, nil
}

// identityToken mints a token of namespace/name in plane into the token
// file called file, records where it comes from, so it can be minted again,
// and returns the file's path.
func (p *Platform) identityToken(ctx context.Context, file, plane, namespace, name string) (string, error) {
	path := filepath.Join(p.cfg.StateDir, identitiesDir, tokensDir, file)
	rec := TokenRecord{Path: path, Plane: plane, Namespace: namespace, Name: name}
	if err := mintAll(ctx, []TokenRecord{rec}, func(ctx context.Context, plane, namespace, name string, ttl time.Duration) (string, error) {
		return mintToken(ctx, p.env.Plane(plane).Config(), plane, namespace, name, ttl)
	}, IdentityTokenTTL); err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.state.IdentityTokens, rec) {
		p.state.IdentityTokens = append(p.state.IdentityTokens, rec)
	}
	return path, nil
}

// writeCellQuotaKubeconfig writes the quota kubeconfig of a cell (cell
// set: through its links, as its ServiceAccount in compute-cells) or of
// people (cell empty: direct, as compute-cells/local-operator): a context
// per project, named after it, and no current context.
func (p *Platform) writeCellQuotaKubeconfig(ctx context.Context, path, cell string) error {
	account := cell
	if cell == "" {
		account = peopleQuotaServiceAccount
	}
	out := clientcmdapi.NewConfig()
	for _, project := range p.cfg.Projects {
		plane := ProjectPlane(project)
		server := p.env.Plane(plane).URL()
		if cell != "" {
			server = p.linkURL(cell, plane)
		}
		user := account + "@" + plane
		tokenFile, err := p.identityToken(ctx, user+".token", plane, cellsNamespace, account)
		if err != nil {
			return err
		}
		out.Clusters[plane] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: p.env.Plane(plane).CAPEM()}
		out.AuthInfos[user] = &clientcmdapi.AuthInfo{TokenFile: tokenFile}
		out.Contexts[project] = &clientcmdapi.Context{Cluster: plane, AuthInfo: user}
	}
	if err := clientcmd.WriteToFile(*out, path); err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return nil
}
