//go:build linux

package platform

import (
	"context"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/cellhealth"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/toolchain"
)

// webhookConfiguration is Karmada's webhook configuration for the version
// the toolchain pins, pointing at the in-cluster service.
//
//go:embed manifests/karmada-webhook-configuration.yaml
var webhookConfiguration string

// karmadaServiceURL is the webhook base URL in webhookConfiguration.
const karmadaServiceURL = "https://karmada-webhook.karmada-system.svc:443"

// interpreterPath is where the WorkloadDeployment
// ResourceInterpreterCustomization lives in the repository.
const interpreterPath = "config/federation/workloaddeployment-interpreter.yaml"

// karmadaBinaries are the resolved Karmada executables.
type karmadaBinaries struct {
	aggregated, webhook, controllerManager, scheduler string
}

// resolveKarmada finds the Karmada binaries; the error names `make tools`.
func resolveKarmada() (karmadaBinaries, error) {
	var b karmadaBinaries
	var err error
	for _, x := range []struct {
		dst  *string
		name string
	}{
		{&b.aggregated, toolchain.KarmadaAggregatedAPIServer},
		{&b.webhook, toolchain.KarmadaWebhook},
		{&b.controllerManager, toolchain.KarmadaControllerManager},
		{&b.scheduler, toolchain.KarmadaScheduler},
	} {
		if *x.dst, err = toolchain.Path(x.name); err != nil {
			return b, err
		}
	}
	return b, nil
}

// startKarmada brings up the federation plane's Karmada components on the
// running hub: the aggregated apiserver and the webhook (with their
// registrations), the member Clusters and the interpreter, then the
// controller manager and scheduler (every CRD is installed by now), and
// waits until every Cluster is Ready.
func (p *Platform) startKarmada(ctx context.Context, bin karmadaBinaries) error {
	c, err := newClient(p.env.Plane(HubPlane))
	if err != nil {
		return err
	}
	free, err := planes.FreePorts(8)
	if err != nil {
		return err
	}
	ports := newKarmadaPorts(free)
	certs, err := p.prepareKarmada(ctx, c)
	if err != nil {
		return err
	}
	began := time.Now()
	if err := p.startKarmadaServers(ctx, c, bin, ports, certs); err != nil {
		return err
	}
	p.timing("karmada aggregated apiserver and webhook", began)
	began = time.Now()
	if err := p.startKarmadaControllers(ctx, c, bin, ports); err != nil {
		return err
	}
	p.timing("karmada controllers and clusters Ready", began)
	return nil
}

// karmadaCerts are the serving certificates of Karmada's servers.
type karmadaCerts struct {
	// aggregatedCert and aggregatedKey are the aggregated apiserver's.
	aggregatedCert, aggregatedKey string
	// webhookDir holds the webhook's tls.crt and tls.key.
	webhookDir string
}

// prepareKarmada issues the servers' certificates and creates Karmada's
// namespaces in the hub.
func (p *Platform) prepareKarmada(ctx context.Context, c client.Client) (karmadaCerts, error) {
	dir := filepath.Join(p.cfg.StateDir, "karmada")
	certs := karmadaCerts{webhookDir: filepath.Join(dir, "webhook")}
	var err error
	certs.aggregatedCert, certs.aggregatedKey, err = p.writeServingCert(filepath.Join(dir, "aggregated-apiserver"), "karmada-aggregated-apiserver", aggregatedServiceHost)
	if err != nil {
		return karmadaCerts{}, err
	}
	if _, _, err := p.writeServingCert(certs.webhookDir, "karmada-webhook"); err != nil {
		return karmadaCerts{}, err
	}
	// compute-system holds the cells' heartbeat Leases (the hub overlay
	// creates it in a real install).
	for _, ns := range []string{karmadaSystemNamespace, karmadaClusterNamespace, cellhealth.Namespace} {
		if err := ensureNamespace(ctx, c, ns); err != nil {
			return karmadaCerts{}, err
		}
	}
	return certs, nil
}

// startKarmadaServers starts the aggregated apiserver and the webhook and
// registers them with the hub, then waits until the hub serves Karmada's
// Clusters through the aggregated apiserver.
func (p *Platform) startKarmadaServers(ctx context.Context, c client.Client, bin karmadaBinaries, ports karmadaPorts, certs karmadaCerts) error {
	hubKubeconfig := p.env.Plane(HubPlane).KubeconfigPath()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return p.startHubComponent(gctx, componentAggregatedAPIServer, bin.aggregated, ports.aggregated,
			aggregatedAPIServerArgs(hubKubeconfig, p.env.EtcdURL(), certs.aggregatedCert, certs.aggregatedKey, ports.aggregated),
			"https://"+hostPort(ports.aggregated)+"/readyz")
	})
	g.Go(func() error {
		return p.startHubComponent(gctx, componentWebhook, bin.webhook, ports.webhook,
			webhookArgs(hubKubeconfig, certs.webhookDir, ports), "https://"+hostPort(ports.webhook)+"/readyz/")
	})
	g.Go(func() error {
		// Registrations can precede their servers: nothing in the hub
		// uses Karmada's kinds yet.
		return p.registerKarmadaServers(gctx, c, ports)
	})
	if err := g.Wait(); err != nil {
		return err
	}
	return p.waitAPIServiceAvailable(ctx, c)
}

// startKarmadaControllers registers the member Clusters and installs the
// interpreter, starts the controller manager and the scheduler, and waits
// until every Cluster is Ready.
func (p *Platform) startKarmadaControllers(ctx context.Context, c client.Client, bin karmadaBinaries, ports karmadaPorts) error {
	if err := p.registerClusters(ctx, c); err != nil {
		return err
	}
	if err := p.installInterpreter(ctx, c); err != nil {
		return err
	}
	if err := p.publishInstanceTypes(ctx, c); err != nil {
		return err
	}
	hubKubeconfig := p.env.Plane(HubPlane).KubeconfigPath()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return p.startHubComponent(gctx, componentControllerManager, bin.controllerManager, ports.controllerHealth,
			controllerManagerArgs(hubKubeconfig, ports), "http://"+hostPort(ports.controllerHealth)+"/healthz")
	})
	g.Go(func() error {
		return p.startHubComponent(gctx, componentScheduler, bin.scheduler, ports.schedulerHealth,
			schedulerArgs(hubKubeconfig, ports), "http://"+hostPort(ports.schedulerHealth)+"/healthz")
	})
	if err := g.Wait(); err != nil {
		return err
	}
	return p.waitClustersReady(ctx, c)
}

// startHubComponent starts a Karmada component of the hub, ready when
// health answers 200.
func (p *Platform) startHubComponent(ctx context.Context, name, binary string, port int, args []string, health string) error {
	return p.startComponent(ctx, planes.ComponentSpec{Name: name, Plane: HubPlane, Binary: binary, Port: port, Args: args}, health, false)
}

// writeServingCert issues a serving certificate signed by the platform CA
// into dir as tls.crt/tls.key and returns their paths.
func (p *Platform) writeServingCert(dir, commonName string, sans ...string) (certFile, keyFile string, err error) {
	certPEM, keyPEM, err := p.env.IssueServingCert(commonName, sans...)
	if err != nil {
		return "", "", fmt.Errorf("failed to issue a certificate for %s: %w", commonName, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("failed to create %s: %w", dir, err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("failed to write %s: %w", certFile, err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("failed to write %s: %w", keyFile, err)
	}
	return certFile, keyFile, nil
}

// registerKarmadaServers creates the APIService and ExternalName Service of
// the aggregated apiserver and the URL-based webhook configurations.
func (p *Platform) registerKarmadaServers(ctx context.Context, c client.Client, ports karmadaPorts) error {
	caBundle := base64.StdEncoding.EncodeToString(p.env.CAPEM())
	api := aggregatedAPI{
		service: aggregatedServiceName, namespace: karmadaSystemNamespace, port: ports.aggregated,
		group: "cluster.karmada.io", version: "v1alpha1", groupPriorityMinimum: 2000, caBundle: caBundle,
	}
	objs := api.objects()
	hooks, err := webhookObjects(webhookConfiguration, "https://"+hostPort(ports.webhook), caBundle)
	if err != nil {
		return err
	}
	objs = append(objs, hooks...)
	for _, o := range objs {
		if err := apply(ctx, c, o); err != nil {
			return err
		}
	}
	return nil
}

// webhookObjects renders Karmada's webhook configuration for a webhook
// served at baseURL and trusted through caBundle (base64).
func webhookObjects(manifest, baseURL, caBundle string) ([]*unstructured.Unstructured, error) {
	rendered := strings.ReplaceAll(manifest, karmadaServiceURL, baseURL)
	rendered = strings.ReplaceAll(rendered, "{{caBundle}}", caBundle)
	return decodeObjects([]byte(rendered))
}

// decodeObjects decodes every object of a multi-document YAML stream.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	err := planes.EachYAMLDocument(data, func(doc []byte) error {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return err
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// waitAPIServiceAvailable waits until the hub reaches the aggregated
// apiserver: clusters.cluster.karmada.io answers a list.
func (p *Platform) waitAPIServiceAvailable(ctx context.Context, c client.Client) error {
	var last error
	err := p.poll(ctx, func(ctx context.Context) (bool, error) {
		last = c.List(ctx, &clusterv1alpha1.ClusterList{})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the hub cannot reach %s through APIService v1alpha1.cluster.karmada.io; see %s: %w",
			componentAggregatedAPIServer, p.logPath(componentAggregatedAPIServer), errors.Join(err, last))
	}
	p.progress.linef("APIService v1alpha1.cluster.karmada.io available")
	return nil
}

// registerClusters registers every cell as a push-mode Karmada Cluster: a
// Secret with the cell's static bearer token and CA, and the Cluster
// labelled with its city code.
func (p *Platform) registerClusters(ctx context.Context, c client.Client) error {
	for _, city := range p.cfg.Cities {
		name := CellPlane(city)
		cell := p.env.Plane(name)
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: karmadaClusterNamespace}}
		if _, err := createOrUpdate(ctx, c, secret, func() {
			secret.Data = map[string][]byte{
				clusterv1alpha1.SecretTokenKey:  []byte(p.tokens[name]),
				clusterv1alpha1.SecretCADataKey: cell.CAPEM(),
			}
		}); err != nil {
			return fmt.Errorf("failed to write the credentials of cluster %s: %w", name, err)
		}
		cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := createOrUpdate(ctx, c, cluster, func() {
			if cluster.Labels == nil {
				cluster.Labels = map[string]string{}
			}
			cluster.Labels[computev1alpha.CityCodeTopologyLabel] = city
			cluster.Spec.SyncMode = clusterv1alpha1.Push
			cluster.Spec.APIEndpoint = p.linkURL(HubPlane, name)
			cluster.Spec.SecretRef = &clusterv1alpha1.LocalSecretReference{Namespace: karmadaClusterNamespace, Name: name}
			// Karmada's cluster proxy (the debug API's path to a Pod's log
			// and exec) impersonates the caller in the cell with this
			// token: the cell's RBAC then judges the caller, not Karmada.
			cluster.Spec.ImpersonatorSecretRef = &clusterv1alpha1.LocalSecretReference{Namespace: karmadaClusterNamespace, Name: name}
		}); err != nil {
			return fmt.Errorf("failed to register cluster %s: %w", name, err)
		}
		p.state.Clusters = append(p.state.Clusters, ClusterRecord{Name: name, City: city})
	}
	p.progress.linef("registered clusters %s", strings.Join(clusterNames(p.state.Clusters), ", "))
	return p.saveState()
}

// installInterpreter installs the WorkloadDeployment
// ResourceInterpreterCustomization from the repository.
func (p *Platform) installInterpreter(ctx context.Context, c client.Client) error {
	path := filepath.Join(p.repo, interpreterPath)
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("failed to read the WorkloadDeployment interpreter: %w", err)
	}
	objs, err := decodeObjects(data)
	if err != nil {
		return fmt.Errorf("failed to decode %s: %w", path, err)
	}
	for _, o := range objs {
		if err := apply(ctx, c, o); err != nil {
			return fmt.Errorf("failed to install %s (karmada-webhook validates its Lua; see %s): %w", path, p.logPath(componentWebhook), err)
		}
	}
	p.progress.linef("installed ResourceInterpreterCustomization from %s", interpreterPath)
	return nil
}

// Where the InstanceType catalog and its propagation come from.
const (
	instanceTypesPath           = "config/instancetypes/standard.yaml"
	instanceTypePropagationPath = "config/federation/instancetypes-propagation.yaml"
)

// publishInstanceTypes publishes Datum's standard InstanceTypes as an
// operator does: in every project plane (admission and Workload status
// read them there) and in the hub, with the ClusterPropagationPolicy
// instance-types that carries them to every cell (quota sizing and the
// runtime provider read them there). The management role does not copy
// them: the catalog is the operator's, applied to each plane.
func (p *Platform) publishInstanceTypes(ctx context.Context, hub client.Client) error {
	clients := []client.Client{hub}
	for _, project := range p.cfg.Projects {
		c, err := newClient(p.env.Plane(ProjectPlane(project)))
		if err != nil {
			return err
		}
		clients = append(clients, c)
	}
	if _, err := os.Stat(filepath.Join(p.repo, instanceTypesPath)); errors.Is(err, os.ErrNotExist) {
		// A tree from before the catalog (the upgrade test's earlier
		// release): its compute sizes from a table in code.
		p.progress.linef("no InstanceType catalog in %s: an earlier release; none published", p.repo)
		return nil
	}
	for i, path := range []string{instanceTypePropagationPath, instanceTypesPath} {
		data, err := os.ReadFile(filepath.Join(p.repo, path))
		if err != nil {
			return fmt.Errorf("failed to read %s: %w", path, err)
		}
		objs, err := decodeObjects(data)
		if err != nil {
			return fmt.Errorf("failed to decode %s: %w", path, err)
		}
		targets := clients
		if i == 0 {
			targets = clients[:1] // the policy is the hub's
		}
		for _, c := range targets {
			for _, o := range objs {
				if err := apply(ctx, c, o.DeepCopy()); err != nil {
					return fmt.Errorf("failed to apply %s %s from %s: %w", o.GetKind(), o.GetName(), path, err)
				}
			}
		}
	}
	p.progress.linef("published the InstanceTypes of %s (propagated to every cell by ClusterPropagationPolicy instance-types)", instanceTypesPath)
	return nil
}

// waitClustersReady waits until every registered Cluster is Ready.
func (p *Platform) waitClustersReady(ctx context.Context, c client.Client) error {
	var pending []string
	err := p.poll(ctx, func(ctx context.Context) (bool, error) {
		pending = pending[:0]
		for _, rec := range p.state.Clusters {
			cluster := &clusterv1alpha1.Cluster{}
			if err := c.Get(ctx, client.ObjectKey{Name: rec.Name}, cluster); err != nil {
				pending = append(pending, rec.Name+" ("+err.Error()+")")
				continue
			}
			if !meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
				pending = append(pending, rec.Name)
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("karmada clusters not Ready: %s; see %s", strings.Join(pending, ", "), p.logPath(componentControllerManager))
	}
	p.progress.linef("clusters Ready: %s", strings.Join(clusterNames(p.state.Clusters), ", "))
	return nil
}

// clusterNames lists the names of clusters.
func clusterNames(cs []ClusterRecord) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name+"("+c.City+")")
	}
	return out
}

// poll runs cond every 100ms until it is true, ctx ends or the platform
// timeout passes.
func (p *Platform) poll(ctx context.Context, cond wait.ConditionWithContextFunc) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond)
}

// logPath is the log file of a component.
func (p *Platform) logPath(component string) string {
	return filepath.Join(p.LogsDir(), component+".log")
}

// LogsDir is the directory of the components' logs, <name>.log each.
func (p *Platform) LogsDir() string {
	return filepath.Join(p.cfg.StateDir, "logs")
}

// newToken returns a random bearer token.
func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := randRead(b); err != nil {
		return "", fmt.Errorf("failed to generate a token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// writeTokenFile writes a kube-apiserver --token-auth-file granting token
// to the Karmada controllers as system:masters.
func writeTokenFile(path, token string) error {
	line := token + ",karmada-controller-manager,karmada-controller-manager," + strconv.Quote("system:masters") + "\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(line), 0o600)
}
