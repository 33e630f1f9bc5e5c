package manager

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/instance"
	"github.com/citycells/compute/internal/quota"
)

// Flags of the cell role's quota configuration.
const (
	// QuotaKubeconfigFlag names the kubeconfig that reaches the projects'
	// quota planes.
	QuotaKubeconfigFlag = "quota-kubeconfig"
	// QuotaMiloFlag says that kubeconfig is Milo's API host.
	QuotaMiloFlag = "quota-milo"
	// CellNameFlag names the cell: in the claims it makes, and as the
	// heartbeat Lease it renews in the federation plane.
	CellNameFlag = "cell-name"
)

// QuotaOptions configure how the cell role claims quota for its Instances.
// Without a quota kubeconfig quota is disabled: every Instance is admitted
// with QuotaGranted=True, reason QuotaDisabled, and
// compute_quota_enforcement_enabled says 0.
type QuotaOptions struct {
	// Kubeconfig reaches the projects' quota planes: either one context per
	// project, named after the project (and the current context for every
	// other project), or, with Milo, Milo's API host.
	Kubeconfig string
	// Milo reaches each project's quota plane through Milo's URL scheme
	// under the kubeconfig's current context:
	// <host>/apis/resourcemanager.miloapis.com/v1alpha1/projects/<project>/control-plane.
	Milo bool
	// CellName is this cell's name — its Karmada Cluster name: the
	// source-cluster label of every claim it makes, and the name of the
	// heartbeat Lease it renews in the federation plane (cellhealth).
	// Required with Kubeconfig; without it the cell sends no heartbeat and
	// is judged by Karmada's Cluster Ready condition alone.
	CellName string
}

// AddFlags binds the quota options to a flag set.
func (q *QuotaOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&q.Kubeconfig, QuotaKubeconfigFlag, q.Kubeconfig,
		"Kubeconfig reaching the projects' quota planes (cell role): one context per project, named after it, "+
			"the current context for any other project; with --"+QuotaMiloFlag+", Milo's API host. "+
			"Unset disables quota: Instances are admitted without a claim (QuotaGranted reason QuotaDisabled).")
	fs.BoolVar(&q.Milo, QuotaMiloFlag, q.Milo,
		"The current context of --"+QuotaKubeconfigFlag+" is Milo's API host: each project's quota plane is reached at "+
			"<host>"+strings.ReplaceAll(quota.MiloControlPlanePath, "%s", "<project>")+".")
	fs.StringVar(&q.CellName, CellNameFlag, q.CellName,
		"Name of this cell, its Karmada Cluster name: recorded on every quota claim it makes (label "+computev1alpha.SourceClusterLabel+"), "+
			"and the heartbeat Lease it renews in namespace compute-system of the federation plane so the management plane can tell it is reachable. "+
			"Required with --"+QuotaKubeconfigFlag+"; without it the cell sends no heartbeat.")
}

// Enabled reports whether quota is configured.
func (q *QuotaOptions) Enabled() bool {
	return q.Kubeconfig != ""
}

// Validate reports every problem of the quota options at once, each
// naming its flag. cell says whether the cell role is enabled: quota
// options are the cell role's and are an error without it.
func (q *QuotaOptions) Validate(cell bool) error {
	var errs []error
	if !cell {
		for _, f := range []struct {
			name string
			set  bool
		}{{QuotaKubeconfigFlag, q.Kubeconfig != ""}, {QuotaMiloFlag, q.Milo}, {CellNameFlag, q.CellName != ""}} {
			if f.set {
				errs = append(errs, fmt.Errorf("--%s configures the cell role's quota: pass --enable-cell-controllers too, or drop it", f.name))
			}
		}
		return errors.Join(errs...)
	}
	if q.Kubeconfig == "" {
		if q.Milo {
			errs = append(errs, fmt.Errorf("--%s needs --%s: the kubeconfig of Milo's API host", QuotaMiloFlag, QuotaKubeconfigFlag))
		}
		return errors.Join(errs...)
	}
	if err := readable(q.Kubeconfig); err != nil {
		errs = append(errs, fmt.Errorf("--%s %q cannot be read: %w", QuotaKubeconfigFlag, q.Kubeconfig, err))
	}
	switch {
	case q.CellName == "":
		errs = append(errs, fmt.Errorf("--%s is required with --%s: it labels every quota claim this cell makes (%s)",
			CellNameFlag, QuotaKubeconfigFlag, computev1alpha.SourceClusterLabel))
	case len(validation.IsValidLabelValue(q.CellName)) > 0:
		errs = append(errs, fmt.Errorf("--%s %q is not a valid label value: %s",
			CellNameFlag, q.CellName, strings.Join(validation.IsValidLabelValue(q.CellName), "; ")))
	}
	return errors.Join(errs...)
}

// readable checks that a file can be opened for reading.
func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

// addQuotaTypes adds the quota kinds to the manager's scheme.
func addQuotaTypes(s *runtime.Scheme) error {
	if err := quotav1alpha1.AddToScheme(s); err != nil {
		return fmt.Errorf("failed to add the quota types to the scheme: %w", err)
	}
	return nil
}

// quotaClient returns the cell role's quota backend. With a quota
// kubeconfig it is a quota.Client labelling claims with the cell name and
// reading cell namespaces uncached; the Instance controller also watches
// its claims where the planes allow. Without one it is nil: quota is
// disabled, which the enforcement metric and an error-level log line say.
func (q *QuotaOptions) quotaClient(mgr ctrl.Manager) (instance.QuotaClient, error) {
	if !q.Enabled() {
		quota.SetEnforcementEnabled(false)
		ctrl.Log.WithName("compute-manager").Error(nil, "Quota enforcement is disabled: --"+QuotaKubeconfigFlag+
			" is not set, so every Instance is admitted without a quota claim (QuotaGranted=True, reason QuotaDisabled)")
		return nil, nil
	}
	// The quota planes are reached with the cell's own client limits
	// (--kube-api-qps, --kube-api-burst): every Instance costs a claim.
	var qps float32
	var burst int
	if mgr != nil {
		cfg := mgr.GetConfig()
		qps, burst = cfg.QPS, cfg.Burst
	}
	planes, err := quota.LoadPlanesWithLimits(q.Kubeconfig, q.Milo, qps, burst)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", QuotaKubeconfigFlag, err)
	}
	c, err := quota.NewClient(quota.Options{SourceCluster: q.CellName, Reader: mgr.GetAPIReader(), Catalog: mgr.GetClient(), Planes: planes})
	if err != nil {
		return nil, fmt.Errorf("--%s/--%s: %w", QuotaKubeconfigFlag, CellNameFlag, err)
	}
	mode := "kubeconfig contexts"
	if q.Milo {
		mode = "Milo"
	}
	ctrl.Log.WithName("compute-manager").Info("Quota enforcement is enabled", "quotaKubeconfig", q.Kubeconfig, "planes", mode, "cell", q.CellName)
	return c, nil
}
