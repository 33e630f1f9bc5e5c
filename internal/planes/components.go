package planes

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// Component names, used for process and log file names.
const (
	componentEtcd                  = "etcd"
	componentKubeAPIServer         = "kube-apiserver"
	componentKubeControllerManager = "kube-controller-manager"
)

// Stop order: controller managers, then apiservers, then etcd, so nothing
// spends its grace period retrying against a dependency that is gone.
const (
	tierEtcd = iota
	tierAPIServer
	tierControllerManager
)

// DefaultControllers are the kube-controller-manager controllers a plane
// runs unless PlaneSpec.Controllers overrides them: ownerReference garbage
// collection and namespace deletion, which a bare apiserver does not do.
var DefaultControllers = []string{"garbagecollector", "namespace"}

// etcdName is etcd's member name; one member per environment.
const etcdName = "compute"

// startEtcd starts the environment's etcd on the given client and peer
// ports and waits until it is healthy; it restarts on fresh ports when it
// loses a port race.
func (e *Environment) startEtcd(ctx context.Context, clientPort, peerPort int) error {
	started := time.Now()
	for attempt := 1; ; attempt++ {
		clientURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
		peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
		args := FlagList(map[string]string{
			"name":                        etcdName,
			"data-dir":                    filepath.Join(e.dir, "etcd"),
			"listen-client-urls":          clientURL,
			"advertise-client-urls":       clientURL,
			"listen-peer-urls":            peerURL,
			"initial-advertise-peer-urls": peerURL,
			"initial-cluster":             etcdName + "=" + peerURL,
			// Throwaway local data: durability is not worth the fsyncs.
			"unsafe-no-fsync": "true",
		})
		p, err := e.launch(launchSpec{
			name:     componentEtcd,
			port:     clientPort,
			peerPort: peerPort,
			binary:   e.bin.etcd,
			args:     args,
		}, tierEtcd)
		if err != nil {
			return err
		}
		err = waitFor(ctx, p, e.timeout, func(ctx context.Context) (bool, error) {
			return HTTPOK(ctx, http.DefaultClient, clientURL+"/health")
		})
		if err == nil {
			e.etcdURL = clientURL
			e.logf("etcd ready on %s (%s)", clientURL, since(started))
			return nil
		}
		ports, perr := e.retryPorts(attempt, p, 2)
		if perr != nil {
			return perr
		}
		if ports == nil {
			return err
		}
		clientPort, peerPort = ports[0], ports[1]
		e.logf("etcd lost a port race, retrying on %d/%d", clientPort, peerPort)
	}
}

// retryPorts returns the n fresh ports to start proc again on, when it
// exited having lost a port race (see FreePorts) and attempts remain:
// proc is forgotten. It returns none when proc is not to start again.
func (e *Environment) retryPorts(attempt int, proc *process, n int) ([]int, error) {
	if attempt >= portAttempts || !lostPortRace(proc) {
		return nil, nil
	}
	e.forget(proc)
	return FreePorts(n)
}

// apiServerArgs returns the kube-apiserver flags of a plane listening on
// p.port; PlaneSpec.ExtraArgs override them.
func (e *Environment) apiServerArgs(p *Plane) []string {
	flags := map[string]string{
		"advertise-address":                "127.0.0.1",
		"bind-address":                     "127.0.0.1",
		"secure-port":                      strconv.Itoa(p.port),
		"cert-dir":                         p.dir,
		"tls-cert-file":                    filepath.Join(p.dir, "serving.crt"),
		"tls-private-key-file":             filepath.Join(p.dir, "serving.key"),
		"client-ca-file":                   e.pki.caPath,
		"etcd-servers":                     e.etcdURL,
		"etcd-prefix":                      "/" + p.name,
		"authorization-mode":               "RBAC",
		"service-account-key-file":         filepath.Join(p.dir, "sa.pub"),
		"service-account-signing-key-file": filepath.Join(p.dir, "sa.key"),
		"service-account-issuer":           p.url,
		"service-cluster-ip-range":         "10.0.0.0/24",
		// No nodes, no kube-proxy: nothing would use the endpoints of the
		// kubernetes service, and the reconciler would fight other planes.
		"endpoint-reconciler-type": "none",
		// Pods need no token volume and no "default" ServiceAccount, which
		// only the controller manager's serviceaccount controller creates.
		"disable-admission-plugins":    "ServiceAccount",
		"enable-priority-and-fairness": "false",
		"allow-privileged":             "true",
		"profiling":                    "false",
	}
	if p.spec.Aggregation {
		maps.Copy(flags, map[string]string{
			"requestheader-client-ca-file":       e.pki.frontProxyCAPath,
			"requestheader-allowed-names":        frontProxyClientName,
			"requestheader-username-headers":     "X-Remote-User",
			"requestheader-group-headers":        "X-Remote-Group",
			"requestheader-extra-headers-prefix": "X-Remote-Extra-",
			"proxy-client-cert-file":             e.pki.frontProxyCrtPath,
			"proxy-client-key-file":              e.pki.frontProxyKeyPath,
		})
	}
	mergeFlags(flags, p.spec.ExtraArgs)
	return FlagList(flags)
}

// startAPIServer starts the plane's kube-apiserver and waits for /readyz;
// it restarts on a fresh port when it loses a port race.
func (e *Environment) startAPIServer(ctx context.Context, p *Plane, port int) error {
	started := time.Now()
	name := componentKubeAPIServer + "-" + p.name
	for attempt := 1; ; attempt++ {
		if err := p.bind(port); err != nil {
			return err
		}
		proc, err := e.launch(launchSpec{
			name:   name,
			plane:  p.name,
			port:   port,
			binary: e.bin.apiServer,
			args:   e.apiServerArgs(p),
		}, tierAPIServer)
		if err != nil {
			return err
		}
		client, err := rest.HTTPClientFor(p.config)
		if err != nil {
			return fmt.Errorf("failed to create client for plane %s: %w", p.name, err)
		}
		err = waitFor(ctx, proc, e.timeout, func(ctx context.Context) (bool, error) {
			return HTTPOK(ctx, client, p.url+"/readyz")
		})
		if err == nil {
			e.logf("kube-apiserver %s ready on %s (%s)", p.name, p.url, since(started))
			return nil
		}
		ports, perr := e.retryPorts(attempt, proc, 1)
		if perr != nil {
			return perr
		}
		if ports == nil {
			return err
		}
		port = ports[0]
		e.logf("kube-apiserver %s lost a port race, retrying on %d", p.name, port)
	}
}

// startControllerManager starts the plane's kube-controller-manager and
// waits until its controllers have started (and the garbage collector has
// synced, when it runs). It serves nothing (--secure-port=0), so readiness
// is read from its log.
func (e *Environment) startControllerManager(ctx context.Context, p *Plane) error {
	started := time.Now()
	kubeconfigPath := filepath.Join(p.dir, "controller-manager.kubeconfig")
	// A distinct user name makes its requests recognisable in audit and
	// apiserver logs; system:masters spares us its RBAC.
	id, err := e.pki.ca.client("system:kube-controller-manager", "system:masters")
	if err != nil {
		return err
	}
	data, err := kubeconfig(p.name, "system:kube-controller-manager", p.url, e.pki.ca.certPEM, id)
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfigPath, data, 0o600); err != nil {
		return fmt.Errorf("failed to write controller-manager kubeconfig for plane %s: %w", p.name, err)
	}
	controllers := p.spec.Controllers
	if len(controllers) == 0 {
		controllers = DefaultControllers
	}
	flags := map[string]string{
		"kubeconfig":     kubeconfigPath,
		"controllers":    strings.Join(controllers, ","),
		"leader-elect":   "false",
		"secure-port":    "0",
		"kube-api-qps":   "100",
		"kube-api-burst": "200",
	}
	mergeFlags(flags, p.spec.ControllerManagerArgs)
	proc, err := e.launch(launchSpec{
		name:   componentKubeControllerManager + "-" + p.name,
		plane:  p.name,
		binary: e.bin.controllerManager,
		args:   FlagList(flags),
	}, tierControllerManager)
	if err != nil {
		return err
	}
	markers := []string{`"Started controller"`}
	if slices.Contains(controllers, "garbagecollector") || slices.Contains(controllers, "*") {
		markers = append(markers, "Proceeding to collect garbage")
	}
	err = waitFor(ctx, proc, e.timeout, func(context.Context) (bool, error) {
		return logContains(proc, markers...)
	})
	if err != nil {
		return err
	}
	e.logf("kube-controller-manager %s started %s (%s)", p.name, strings.Join(controllers, ","), since(started))
	return nil
}

// logContains reports whether the current attempt's log holds every marker.
func logContains(p *process, markers ...string) (bool, error) {
	f, err := os.Open(p.info.LogPath)
	if err != nil {
		return false, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(p.logOffset, io.SeekStart); err != nil {
		return false, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return false, err
	}
	for _, m := range markers {
		if !strings.Contains(string(data), m) {
			return false, nil
		}
	}
	return true, nil
}

// HTTPOK reports whether GET url answers 200 within 2s; otherwise the
// error names the status and the start of the body.
func HTTPOK(ctx context.Context, client *http.Client, url string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return true, nil
}

// mergeFlags overrides flags with extra; keys may be written with or without
// the leading dashes.
func mergeFlags(flags, extra map[string]string) {
	for k, v := range extra {
		flags[strings.TrimLeft(k, "-")] = v
	}
}

// FlagList renders flags as sorted --key=value arguments so command lines
// are stable and easy to compare.
func FlagList(flags map[string]string) []string {
	args := make([]string, 0, len(flags))
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		args = append(args, "--"+k+"="+flags[k])
	}
	return args
}

// since formats the time elapsed since t for progress lines.
func since(t time.Time) string {
	return time.Since(t).Round(10 * time.Millisecond).String()
}
