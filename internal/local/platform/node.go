//go:build linux

package platform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/toolchain"
)

// A real node of a cell: containerd (with runc and the CNI bridge), kubelet
// registered as node-<city>, and kube-scheduler, all against the cell's
// apiserver. Each node has a containerd of its own (kubelets sharing one
// would stop each other's Pods) and runs without per-QoS cgroups (two
// kubelets would fight over /kubepods).
const (
	componentContainerd    = "containerd"
	componentKubelet       = "kubelet"
	componentKubeScheduler = "kube-scheduler"
	// nodeGroup is the group every node's kubelet authenticates in.
	nodeGroup = "system:nodes"
	// cniBinDir is where Debian's containernetworking-plugins live.
	cniBinDir = "/usr/lib/cni"
)

// nodeMonitorGracePeriod is how long a node may go unheard before the
// cell's node lifecycle controller marks it NotReady and its Pods not
// Ready (Kubernetes' default is 50 s; a laptop wants to see it sooner).
const nodeMonitorGracePeriod = 16 * time.Second

// NodeAllocationRatio is the Kubernetes provider's allocation ratio on the
// local platform's nodes (compute-manager --runtime-allocation-ratio): a
// Pod requests its instance type's size divided by it (its limits are the
// size), so 50 instances of 1 vCPU fit on a 2-core development machine, as
// they would on a real cell's nodes at ratio 1.
const NodeAllocationRatio = 32

// nodeName is the Node name of a city's node.
func nodeName(city string) string { return "node-" + strings.ToLower(city) }

// nodeComponent names a node process of a city: kubelet-dfw, ...
func nodeComponent(kind, city string) string { return kind + "-" + strings.ToLower(city) }

// podCIDR is the Pod range of the i-th city: 10.244.<i+1>.0/24.
func podCIDR(i int) string { return fmt.Sprintf("10.244.%d.0/24", i%250+1) }

// nodePlan is everything about one node before it starts.
type nodePlan struct {
	NodeRecord
	cell                                        string
	kubeletPort, kubeletHealth, schedulerPort   int
	containerdConfig, kubeletConfig, cniConfDir string
	// address is the node's InternalIP, where its kubelet serves (with a
	// certificate of the platform CA) so that metrics-server, which
	// dials a node's address, reaches it; 127.0.0.1 when this machine has
	// no other address.
	address string
	// metricsPort is the secure port of the cell's metrics-server.
	metricsPort int
}

// NodePrerequisites reports what this machine lacks to run a real node, as
// one error that says how to get it; nil when nothing is missing.
func NodePrerequisites() error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (containerd and kubelet manage mounts, cgroups and network namespaces)")
	}
	for _, b := range []string{"containerd", "runc", "ip"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if _, err := os.Stat(filepath.Join(cniBinDir, "bridge")); err != nil {
		missing = append(missing, "the CNI plugins in "+cniBinDir)
	}
	for _, b := range []string{toolchain.Kubelet, toolchain.KubeScheduler, toolchain.MetricsServer} {
		if _, err := toolchain.Path(b); err != nil {
			missing = append(missing, b+" (make tools)")
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("a real node needs %s: run `make tools` as root (it installs containerd, runc and containernetworking-plugins with apt-get)",
		strings.Join(missing, ", "))
}

// planNodes lays out the nodes of Config.Nodes.
func (p *Platform) planNodes() ([]nodePlan, error) {
	sock := socketDir(p.cfg.StateDir)
	address := hostIP()
	if address == "" {
		address = "127.0.0.1"
	}
	out := make([]nodePlan, 0, len(p.cfg.Nodes))
	for i, city := range p.cfg.Cities {
		if !p.cfg.hasNode(city) {
			continue
		}
		ports, err := planes.FreePorts(4)
		if err != nil {
			return nil, err
		}
		lower := strings.ToLower(city)
		dir := filepath.Join(p.cfg.StateDir, "nodes", lower)
		out = append(out, nodePlan{
			NodeRecord: NodeRecord{
				Name: nodeName(city), City: city, Dir: dir,
				Socket:   filepath.Join(sock, lower+".sock"),
				RuncRoot: filepath.Join(dir, "runc"),
				Bridge:   "compute-" + lower,
				PodCIDR:  podCIDR(i),
			},
			cell:             CellPlane(city),
			kubeletPort:      ports[0],
			kubeletHealth:    ports[1],
			schedulerPort:    ports[2],
			metricsPort:      ports[3],
			address:          address,
			containerdConfig: filepath.Join(dir, "containerd.toml"),
			kubeletConfig:    filepath.Join(dir, "kubelet.yaml"),
			cniConfDir:       filepath.Join(dir, "cni"),
		})
	}
	return out, nil
}

// socketDir is where the nodes' containerd sockets live: a short path (a
// socket path has at most 107 bytes), one per state directory.
func socketDir(stateDir string) string {
	sum := sha256.Sum256([]byte(stateDir))
	return filepath.Join("/run", "compute-local-"+hex.EncodeToString(sum[:4]))
}

// startNodes starts the local registry, pushes the demo and sandbox images,
// and starts every node: containerd, kube-scheduler and kubelet, waiting
// until each Node is Ready.
func (p *Platform) startNodes(ctx context.Context) error {
	if p.cfg.NodesUnavailable != "" {
		// Not a problem of the platform: --nodes=auto on a machine that
		// cannot run a node.
		p.progress.linef("no real node: %s; every cell runs the simulated provider", p.cfg.NodesUnavailable)
	}
	if len(p.cfg.Nodes) == 0 {
		return nil
	}
	if err := NodePrerequisites(); err != nil {
		return err
	}
	began := time.Now()
	if err := p.startRegistry(ctx); err != nil {
		return err
	}
	plans, err := p.planNodes()
	if err != nil {
		return err
	}
	built := make(chan error, 1)
	go func() { built <- p.pushDemoImages(ctx) }()
	for _, n := range plans {
		if err := p.startContainerd(ctx, n); err != nil {
			return err
		}
	}
	if err := <-built; err != nil {
		return err
	}
	for _, n := range plans {
		if err := p.startKubeletAndScheduler(ctx, n); err != nil {
			return err
		}
		if err := p.startMetricsServer(ctx, n); err != nil {
			return err
		}
	}
	p.timing("real nodes", began)
	return nil
}

// startContainerd writes a node's containerd and CNI configuration and
// starts its containerd.
func (p *Platform) startContainerd(ctx context.Context, n nodePlan) error {
	for _, d := range []string{n.Dir, n.RuncRoot, n.cniConfDir, filepath.Dir(n.Socket)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("failed to create %s: %w", d, err)
		}
	}
	registry := p.State().Registry
	files := map[string]string{
		n.containerdConfig: containerdConfig(n, registry),
		filepath.Join(n.cniConfDir, "10-compute.conflist"):      cniConfig(n),
		filepath.Join(n.Dir, "certs.d", registry, "hosts.toml"): registryHosts(registry),
	}
	for path, content := range files {
		if err := writeFile(path, content); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.state.Nodes = append(p.state.Nodes, n.NodeRecord)
	p.mu.Unlock()
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return err
	}
	return p.startComponent(ctx, planes.ComponentSpec{
		Name: nodeComponent(componentContainerd, n.City), Plane: n.cell, Binary: bin,
		Args: []string{"--config", n.containerdConfig},
	}, "unix://"+n.Socket, false)
}

// startKubeletAndScheduler starts a node's kube-scheduler and kubelet and
// waits until the Node is Ready.
func (p *Platform) startKubeletAndScheduler(ctx context.Context, n nodePlan) error {
	pl := p.env.Plane(n.cell)
	c, err := newClient(pl)
	if err != nil {
		return err
	}
	if err := bindNodeRole(ctx, c); err != nil {
		return fmt.Errorf("%s: %w", n.cell, err)
	}
	scheduler, err := toolchain.Path(toolchain.KubeScheduler)
	if err != nil {
		return err
	}
	kubelet, err := toolchain.Path(toolchain.Kubelet)
	if err != nil {
		return err
	}
	schedKubeconfig := filepath.Join(n.Dir, "scheduler.kubeconfig")
	if err := writePlaneKubeconfig(pl, schedKubeconfig, "system:kube-scheduler"); err != nil {
		return err
	}
	if err := p.startComponent(ctx, planes.ComponentSpec{
		Name: nodeComponent(componentKubeScheduler, n.City), Plane: n.cell, Binary: scheduler, Port: n.schedulerPort,
		Args: []string{
			"--kubeconfig=" + schedKubeconfig, "--leader-elect=false",
			"--secure-port=" + strconv.Itoa(n.schedulerPort), "--bind-address=127.0.0.1",
			"--authentication-tolerate-lookup-failure=true",
		},
	}, "https://"+hostPort(n.schedulerPort)+"/healthz", true); err != nil {
		return err
	}
	kubeletArgs := []string{}
	if ip := hostIP(); ip != "" {
		// The kubelet refuses a loopback node address.
		kubeletArgs = append(kubeletArgs, "--node-ip="+ip)
	}
	kubeletKubeconfig := filepath.Join(n.Dir, "kubelet.kubeconfig")
	if err := writePlaneKubeconfig(pl, kubeletKubeconfig, "system:node:"+n.Name, nodeGroup); err != nil {
		return err
	}
	// Its serving certificate names the node's address: metrics-server
	// verifies it against the platform CA.
	if _, _, err := p.writeServingCert(kubeletServingDir(n), n.Name, n.address); err != nil {
		return err
	}
	// Its clients: metrics-server (platform CA) and the cell's apiserver
	// (Pod logs and exec, its kubelet client CA).
	clientCAs, err := p.kubeletClientCAs()
	if err != nil {
		return err
	}
	if err := writeFile(n.kubeletConfig, kubeletConfig(n, clientCAs)); err != nil {
		return err
	}
	if err := p.startComponent(ctx, planes.ComponentSpec{
		Name: nodeComponent(componentKubelet, n.City), Plane: n.cell, Binary: kubelet, Port: n.kubeletPort,
		Args: append(kubeletArgs,
			"--config="+n.kubeletConfig, "--kubeconfig="+kubeletKubeconfig,
			"--root-dir="+filepath.Join(n.Dir, "kubelet"), "--cert-dir="+filepath.Join(n.Dir, "kubelet", "pki"),
			"--hostname-override="+n.Name,
		),
	}, "http://"+hostPort(n.kubeletHealth)+"/healthz", false); err != nil {
		return err
	}
	if err := waitNodeReady(ctx, c, n.Name, p.cfg.Timeout); err != nil {
		return fmt.Errorf("%s: %w (see logs/%s.log)", n.cell, err, nodeComponent(componentKubelet, n.City))
	}
	p.progress.linef("node %s Ready in %s: containerd, kubelet, kube-scheduler; Pods in %s", n.Name, n.cell, n.PodCIDR)
	return nil
}

// bindNodeRole lets kubelets (group system:nodes) do what the system:node
// role allows: Kubernetes binds that role to nobody by default, leaving
// nodes to the Node authorizer, which the planes do not run.
func bindNodeRole(ctx context.Context, c client.Client) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "compute-local:nodes"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: nodeGroup}},
	}
	if err := c.Create(ctx, crb); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to bind the system:node role to %s: %w", nodeGroup, err)
	}
	return nil
}

// waitNodeReady waits until the Node reports Ready.
func waitNodeReady(ctx context.Context, c client.Client, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := "not registered"
	for {
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, node); err == nil {
			last = "registered, not Ready"
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					if cond.Status == corev1.ConditionTrue {
						return nil
					}
					last = fmt.Sprintf("Ready=%s (%s: %s)", cond.Status, cond.Reason, cond.Message)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s is not Ready after %s: %s", name, timeout, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// writePlaneKubeconfig writes a kubeconfig of a plane for user in groups.
func writePlaneKubeconfig(pl *planes.Plane, path, user string, groups ...string) error {
	data, err := pl.ClientKubeconfig(user, groups...)
	if err != nil {
		return fmt.Errorf("failed to mint a kubeconfig for %s: %w", user, err)
	}
	return os.WriteFile(path, data, 0o600)
}

// writeFile writes content to path, creating its directory.
func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("failed to create %s: %w", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return nil
}

// containerdConfig is a node's containerd configuration: its own root,
// state and socket, runc with its own state directory, the CNI bridge, and
// the local registry over plain HTTP.
func containerdConfig(n nodePlan, registry string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  disable_apparmor = true
  # Lowering a process's oom_score_adj needs CAP_SYS_RESOURCE, which some
  # machines (VMs, containers) do not give even to root: keep containers at
  # or above containerd's own score.
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = %[6]q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[7]q
    conf_dir = %[8]q
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[9]q
`, filepath.Join(n.Dir, "containerd", "root"), filepath.Join(n.Dir, "containerd", "state"), n.Socket, n.Socket+".ttrpc",
		registry+"/"+pauseImage, n.RuncRoot, cniBinDir, n.cniConfDir, filepath.Join(n.Dir, "certs.d"))
}

// registryHosts tells containerd to reach the local registry over HTTP.
func registryHosts(registry string) string {
	return fmt.Sprintf(`server = "http://%[1]s"

[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
  skip_verify = true
`, registry)
}

// cniConfig is a node's CNI network: a bridge with the gateway address on
// this machine (so Pod addresses are reachable from it), addresses from
// the node's range, no masquerading.
func cniConfig(n nodePlan) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %[1]q,
  "plugins": [
    {
      "type": "bridge",
      "bridge": %[2]q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %[3]q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %[4]q
      }
    }
  ]
}
`, n.Bridge, n.Bridge, n.PodCIDR, filepath.Join(n.Dir, "cni-ipam"))
}

// kubeletServingDir holds a node's kubelet serving certificate, tls.crt and
// tls.key.
func kubeletServingDir(n nodePlan) string { return filepath.Join(n.Dir, "serving") }

// kubeletConfig is a node's kubelet configuration: its API on the node's
// address only (clients need a certificate of the platform CA), health on
// loopback, its containerd, cgroupfs without per-QoS cgroups, no swap
// check, and eviction and image garbage collection out of the way of a
// shared development machine.
func kubeletConfig(n nodePlan, caPath string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[6]s
port: %[1]d
readOnlyPort: 0
tlsCertFile: %[7]q
tlsPrivateKeyFile: %[8]q
healthzBindAddress: 127.0.0.1
healthzPort: %[2]d
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: %[3]q
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://%[4]s
imageServiceEndpoint: unix://%[4]s
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
localStorageCapacityIsolation: false
serializeImagePulls: false
resolvConf: ""
podCIDR: %[5]q
maxPods: 110
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
nodeStatusUpdateFrequency: 2s
nodeStatusReportFrequency: 10s
syncFrequency: 10s
fileCheckFrequency: 20s
`, n.kubeletPort, n.kubeletHealth, caPath, n.Socket, n.PodCIDR, n.address,
		filepath.Join(kubeletServingDir(n), "tls.crt"), filepath.Join(kubeletServingDir(n), "tls.key"))
}

// hostIP is this machine's first IPv4 address that is neither loopback nor
// on a node's bridge: the nodes' InternalIP. Empty when there is none.
func hostIP() string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifaces {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 || strings.HasPrefix(i.Name, "compute-") {
			continue
		}
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
				return ipn.IP.String()
			}
		}
	}
	return ""
}

// dialUnix reports whether a unix socket accepts connections.
func dialUnix(path string) (bool, error) {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	_ = conn.Close()
	return true, nil
}

// NodeStatus is a real node's Ready condition, as its cell reports it.
type NodeStatus struct {
	NodeRecord
	// Ready is the Node's Ready condition.
	Ready bool `json:"ready"`
	// Reason and Message are its reason and message, or why the Node
	// cannot be read.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// nodeStatuses reads every recorded node's Ready condition from its cell.
func nodeStatuses(ctx context.Context, st *State) []NodeStatus {
	out := make([]NodeStatus, 0, len(st.Nodes))
	for _, n := range st.Nodes {
		s := NodeStatus{NodeRecord: n, Reason: "Unreachable"}
		out = append(out, s)
		cell, err := st.Plane(CellPlane(n.City))
		if err != nil {
			out[len(out)-1].Message = err.Error()
			continue
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", cell.Kubeconfig)
		if err != nil {
			out[len(out)-1].Message = err.Error()
			continue
		}
		cfg.Timeout = 5 * time.Second
		c, err := clientFor(cfg)
		if err != nil {
			out[len(out)-1].Message = err.Error()
			continue
		}
		out[len(out)-1] = nodeStatus(ctx, c, n)
	}
	return out
}

// nodeStatus reads one node's Ready condition.
func nodeStatus(ctx context.Context, c client.Client, n NodeRecord) NodeStatus {
	s := NodeStatus{NodeRecord: n}
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
		s.Reason, s.Message = "NotFound", "cannot read the Node in its cell: "+err.Error()
		return s
	}
	s.Reason, s.Message = "Unknown", "no Ready condition yet"
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			s.Ready = cond.Status == corev1.ConditionTrue
			s.Reason, s.Message = cond.Reason, cond.Message
		}
	}
	return s
}
