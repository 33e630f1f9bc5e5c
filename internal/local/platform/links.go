//go:build linux

package platform

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/citycells/compute/internal/local/faults"
	"github.com/citycells/compute/internal/planes"
)

// linkName names the link from one plane to another.
func linkName(from, to string) string { return from + "→" + to }

// planeHostPort is the host:port of a plane's apiserver.
func planeHostPort(pl *planes.Plane) string {
	u, err := url.Parse(pl.URL())
	if err != nil {
		return pl.URL()
	}
	return u.Host
}

// planLinks chooses the links of every city and their ports: the hub into
// the cell, the cell into the hub, the cell into every project; and the
// webhook fronts of replicated management roles.
func (p *Platform) planLinks() ([]faults.LinkRecord, error) {
	n := len(p.cfg.Cities) * (2 + len(p.cfg.Projects))
	free, err := planes.FreePorts(n + 1)
	if err != nil {
		return nil, err
	}
	hub := planeHostPort(p.env.Plane(HubPlane))
	links := make([]faults.LinkRecord, 0, n)
	next := func() int { port := free[0]; free = free[1:]; return port }
	for _, city := range p.cfg.Cities {
		cell := CellPlane(city)
		links = append(links,
			faults.LinkRecord{Name: linkName(HubPlane, cell), City: city, Port: next(), Target: planeHostPort(p.env.Plane(cell))},
			faults.LinkRecord{Name: linkName(cell, HubPlane), City: city, Port: next(), Target: hub})
		for _, project := range p.cfg.Projects {
			plane := ProjectPlane(project)
			links = append(links, faults.LinkRecord{Name: linkName(cell, plane), City: city, Port: next(), Target: planeHostPort(p.env.Plane(plane))})
		}
	}
	p.controlPort = free[0]
	fronts, err := p.planWebhookFronts()
	if err != nil {
		return nil, err
	}
	return append(links, fronts...), nil
}

// startLinks starts the link proxy: as a process of its own when the
// platform is detached and the caller said how (LinkProxyCommand), so
// partitions outlive `compute-local up`; otherwise inside this process.
func (p *Platform) startLinks(ctx context.Context) error {
	links, err := p.planLinks()
	if err != nil {
		return err
	}
	control := hostPort(p.controlPort)
	if len(p.cfg.LinkProxyCommand) > 0 {
		args := append([]string{}, p.cfg.LinkProxyCommand[1:]...)
		args = append(args, "--state-dir="+p.cfg.StateDir, "--control="+control)
		for _, l := range links {
			args = append(args, "--link="+faults.LinkArg(l))
		}
		if err := p.startComponent(ctx, planes.ComponentSpec{
			Name: faults.LinkProxyComponent, Binary: p.cfg.LinkProxyCommand[0], Args: args, Port: p.controlPort,
		}, "http://"+control+"/healthz", false); err != nil {
			return err
		}
	} else {
		lp, err := faults.NewProxy(links, control)
		if err != nil {
			return err
		}
		lp.Serve()
		p.linkProxy = lp
	}
	p.mu.Lock()
	p.state.Links = links
	p.state.FaultControl = "http://" + control
	p.mu.Unlock()
	if err := p.writeLinkKubeconfigs(); err != nil {
		return err
	}
	p.progress.linef("link proxy serving %d links across the borders of %d cities and in front of %d replicated webhook servers",
		len(links)-len(p.webhookFronts), len(p.cfg.Cities), len(p.webhookFronts))
	return p.saveState()
}

// linkFor returns the link from one plane to another.
func (p *Platform) linkFor(from, to string) (faults.LinkRecord, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.state.Links {
		if l.Name == linkName(from, to) {
			return l, true
		}
	}
	return faults.LinkRecord{}, false
}

// linkURL is the URL that reaches plane to from plane from through the
// link proxy; the plane's own URL when there is no such link.
func (p *Platform) linkURL(from, to string) string {
	if l, ok := p.linkFor(from, to); ok {
		return "https://" + hostPort(l.Port)
	}
	return p.env.Plane(to).URL()
}

// cellHubKubeconfig is the path of the kubeconfig a cell's compute-manager
// reaches the hub with.
func (p *Platform) cellHubKubeconfig(city string) string {
	return filepath.Join(p.cfg.StateDir, "links", CellPlane(city)+"-hub.kubeconfig")
}

// writeLinkKubeconfigs writes every cell's hub kubeconfig: the hub's admin
// kubeconfig with its server moved to the cell's link.
func (p *Platform) writeLinkKubeconfigs() error {
	if err := os.MkdirAll(filepath.Join(p.cfg.StateDir, "links"), 0o700); err != nil {
		return fmt.Errorf("failed to create the links directory: %w", err)
	}
	for _, city := range p.cfg.Cities {
		if err := rewriteKubeconfig(p.env.Plane(HubPlane).KubeconfigPath(), p.cellHubKubeconfig(city),
			p.linkURL(CellPlane(city), HubPlane)); err != nil {
			return err
		}
	}
	return nil
}

// rewriteKubeconfig copies the kubeconfig at from to to with every
// cluster's server set to server.
func rewriteKubeconfig(from, to, server string) error {
	cfg, err := clientcmd.LoadFromFile(from)
	if err != nil {
		return fmt.Errorf("failed to read %s: %w", from, err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	if err := clientcmd.WriteToFile(*cfg, to); err != nil {
		return fmt.Errorf("failed to write %s: %w", to, err)
	}
	return nil
}
