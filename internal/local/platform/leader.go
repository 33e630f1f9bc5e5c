//go:build linux

package platform

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/citycells/compute/internal/local/faults"
	"github.com/citycells/compute/internal/planes"
)

// Replicated roles. With Config.Replicas above 1 every compute-manager role
// and every compute-quota runs that many processes, each with ports of its
// own, electing a leader through a Lease in LeaseNamespace as the shipped
// manifests do; the followers keep their caches warm and serve /readyz (and
// the management role's admission webhooks), and only the leader
// reconciles. A Deployment puts a Service in front of the replicas'
// webhook servers; the platform puts a link of the link proxy there (the
// webhook front), which forwards every connection to the first replica that
// accepts it, so admission keeps working when a replica dies.

// LeaseNamespace is the namespace of the leader election Leases of
// compute-manager and compute-quota: compute-system, as the manifests run
// them (--leader-election-namespace=$(POD_NAMESPACE)).
const LeaseNamespace = identityNamespace

// The Leases' names: the binaries' defaults, which the manifests keep.
const (
	// ManagementLease is the management role's Lease.
	ManagementLease = "compute-management.compute.datumapis.com"
	// CellLease is the cell role's Lease.
	CellLease = "compute-cell.compute.datumapis.com"
	// QuotaLease is compute-quota's Lease.
	QuotaLease = "compute-quota"
)

// acquiredLeaseLog is what client-go's leader election logs when this
// process becomes the leader ("Successfully acquired lease" in structured
// logs, lower case in older ones), compared in lower case.
const acquiredLeaseLog = "successfully acquired lease"

// webhookFront is the webhook front of a replicated management role: the
// link proxy's port the admission webhooks are registered at, and each
// replica's webhook port behind it, in the order the front tries them.
type webhookFront struct {
	port     int
	replicas []int
}

// webhookFrontLink is the name of the link in front of the webhook servers
// of a plane's management role.
func webhookFrontLink(plane string) string {
	return linkName("webhook", componentManagerPrefix+plane)
}

// planWebhookFronts chooses, when the management role is replicated, the
// ports of every project's webhook front and of its replicas' webhook
// servers, and returns the front links (no city: no partition cuts them).
func (p *Platform) planWebhookFronts() ([]faults.LinkRecord, error) {
	if !p.cfg.leaderElect() {
		return nil, nil
	}
	n := p.cfg.Replicas + 1
	free, err := planes.FreePorts(n * len(p.cfg.Projects))
	if err != nil {
		return nil, err
	}
	p.webhookFronts = map[string]webhookFront{}
	links := make([]faults.LinkRecord, 0, len(p.cfg.Projects))
	for i, project := range p.cfg.Projects {
		plane := ProjectPlane(project)
		f := webhookFront{port: free[n*i], replicas: free[n*i+1 : n*(i+1)]}
		p.webhookFronts[plane] = f
		targets := make([]string, 0, len(f.replicas))
		for _, port := range f.replicas {
			targets = append(targets, hostPort(port))
		}
		links = append(links, faults.LinkRecord{Name: webhookFrontLink(plane), Port: f.port, Target: targets[0], Fallbacks: targets[1:]})
	}
	return links, nil
}

// webhookURL is where a management role's admission webhooks are
// registered: its webhook front when it is replicated, else its server.
func (p *Platform) webhookURL(r managerRole) string {
	if f, ok := p.webhookFronts[r.plane]; ok {
		return "https://" + hostPort(f.port)
	}
	return "https://" + hostPort(r.webhookPort)
}

// ensureLeaseNamespaces creates LeaseNamespace where replicated processes
// elect their leaders, when no overlay created it (the admin identity
// mode).
func (p *Platform) ensureLeaseNamespaces(ctx context.Context) error {
	if !p.cfg.leaderElect() || p.ids != nil {
		return nil
	}
	planeNames := make([]string, 0, len(p.cfg.Projects)+len(p.cfg.Cities))
	for _, project := range p.cfg.Projects {
		planeNames = append(planeNames, ProjectPlane(project))
	}
	for _, city := range p.cfg.Cities {
		planeNames = append(planeNames, CellPlane(city))
	}
	for _, plane := range planeNames {
		c, err := newClient(p.env.Plane(plane))
		if err != nil {
			return err
		}
		if err := ensureNamespace(ctx, c, LeaseNamespace); err != nil {
			return fmt.Errorf("failed to create the leader election namespace in %s: %w", plane, err)
		}
	}
	return nil
}

// electsLeader reports whether a component elects a leader: its command
// line says --leader-elect=true.
func electsLeader(c ComponentRecord) bool {
	return slices.Contains(c.Args, "--leader-elect=true")
}

// leads reports whether a running process that elects a leader leads: its
// log says it acquired its Lease since it last started (every start writes
// a "=== " line; a leader that loses its Lease exits).
func leads(c ComponentRecord) bool {
	f, err := os.Open(c.Log)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	leader := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "=== "):
			leader = false
		case strings.Contains(strings.ToLower(line), acquiredLeaseLog):
			leader = true
		}
	}
	return leader
}
