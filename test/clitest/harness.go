package clitest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	servicesv1alpha1 "github.com/citycells/compute/api/services/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/apitest"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/planes"
)

// ProjectPlane is the plane commands run against: entitled to compute.
const ProjectPlane = "project"

// Start starts the planes a CLI test package shares: the project plane
// with compute's CRDs and the external ones (locations, quota,
// entitlements), compute enabled, and the extra planes (one without
// CRDDirs gets the same CRDs; clilive.PlaneSpec is the live plane's), each
// with Datum's standard InstanceTypes. Call it from TestMain and Stop the
// environment after m.Run.
func Start(extra ...planes.PlaneSpec) (*planes.Environment, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	crds := []string{filepath.Join(root, "config/crd/bases"), filepath.Join(root, "config/crd/external")}
	specs := []planes.PlaneSpec{{Name: ProjectPlane, CRDDirs: crds}}
	for _, s := range extra {
		if len(s.CRDDirs) == 0 {
			s.CRDDirs = crds
		}
		specs = append(specs, s)
	}
	env, err := planes.Start(context.Background(), planes.Options{Planes: specs})
	if err != nil {
		return nil, err
	}
	c, err := client.New(env.Plane(ProjectPlane).Config(), client.Options{Scheme: cmdutil.NewScheme()})
	if err != nil {
		env.Stop()
		return nil, err
	}
	if err := SetEntitlement(context.Background(), c, servicesv1alpha1.EntitlementPhaseActive); err != nil {
		env.Stop()
		return nil, err
	}
	for _, s := range specs {
		if err := seedInstanceTypes(context.Background(), env.Plane(s.Name)); err != nil {
			env.Stop()
			return nil, err
		}
	}
	return env, nil
}

// seedInstanceTypes publishes Datum's standard InstanceTypes in the plane,
// as compute-local does: the CLI checks templates against them and the
// cell sizes quota claims from them. Start seeds every plane.
func seedInstanceTypes(ctx context.Context, p *planes.Plane) error {
	c, err := client.New(p.Config(), client.Options{Scheme: cmdutil.NewScheme()})
	if err != nil {
		return err
	}
	for _, it := range apitest.StandardInstanceTypes() {
		if err := c.Create(ctx, it.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create InstanceType %s: %w", it.Name, err)
		}
	}
	return nil
}

// ModuleRoot finds the directory holding go.mod above the working
// directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// SetEntitlement creates or updates the project's compute entitlement with
// phase (empty: delete it).
func SetEntitlement(ctx context.Context, c client.Client, phase servicesv1alpha1.EntitlementPhase) error {
	e := &servicesv1alpha1.ServiceEntitlement{ObjectMeta: metav1.ObjectMeta{Name: cmdutil.EntitlementName}}
	if phase == "" {
		if err := c.Delete(ctx, e); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	}
	e.Spec.ServiceRef.Name = cmdutil.ComputeServiceName
	if err := c.Create(ctx, e); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
		return err
	}
	e.Status.Phase = phase
	cond := metav1.Condition{Type: servicesv1alpha1.ServiceEntitlementConditionReady, Status: metav1.ConditionFalse,
		Reason: string(phase), Message: "the request is being reviewed", LastTransitionTime: metav1.Now()}
	switch phase {
	case servicesv1alpha1.EntitlementPhaseActive:
		cond.Status, cond.Message = metav1.ConditionTrue, "compute is enabled"
	case servicesv1alpha1.EntitlementPhaseRejected:
		cond.Message = "compute is not offered to this organization"
	}
	e.Status.Conditions = []metav1.Condition{cond}
	return c.Status().Update(ctx, e)
}

// Harness runs commands against one plane in a namespace of its own.
type Harness struct {
	// T is the test.
	T testing.TB
	// Kubeconfig is the admin kubeconfig of the plane.
	Kubeconfig string
	// Namespace is the test's namespace.
	Namespace string
	// Client is an admin client of the plane.
	Client client.Client
	// Project is the project commands act in (--project); empty leaves
	// the kubeconfig's context to name the target.
	Project string
}

// namespaces numbers test namespaces.
var namespaces atomic.Int64

// New returns a harness for plane of env with a fresh namespace.
func New(t testing.TB, env *planes.Environment, plane string) *Harness {
	t.Helper()
	p := env.Plane(plane)
	c, err := client.New(p.Config(), client.Options{Scheme: cmdutil.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("t%d-%s", namespaces.Add(1), sanitize(t.Name()))
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return &Harness{T: t, Kubeconfig: p.KubeconfigPath(), Namespace: ns, Client: c}
}

// sanitize turns a test name into a DNS label fragment.
func sanitize(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 40 {
		s = strings.Trim(s[:40], "-")
	}
	return s
}

// Result is what a command did.
type Result struct {
	// Stdout and Stderr are what it wrote.
	Stdout, Stderr string
	// Code is its exit code.
	Code int
}

// RunOptions tune a command run.
type RunOptions struct {
	// Stdin is what the command reads.
	Stdin string
	// Terminal makes the streams look like a terminal of Width columns.
	Terminal bool
	// Width is the terminal width.
	Width int
	// Env is the process environment the command sees.
	Env map[string]string
	// Ctx is the command's context; a new one bounded by a minute when
	// nil.
	Ctx context.Context
	// Factory, when set, adjusts the factory before the run.
	Factory func(*cmdutil.Factory)
}

// Factory returns a factory with buffers for streams, the real clock, a
// fast poll interval and the harness kubeconfig, namespace and project
// (when set) as flags.
func (h *Harness) Factory(o RunOptions, stdout, stderr *bytes.Buffer) *cmdutil.Factory {
	f := &cmdutil.Factory{
		Streams: cmdutil.IOStreams{
			IOStreams:   genericiooptions.IOStreams{In: strings.NewReader(o.Stdin), Out: stdout, ErrOut: stderr},
			InTerminal:  o.Terminal,
			OutTerminal: o.Terminal,
			Width:       o.Width,
		},
		Clock:          clock.RealClock{},
		Getenv:         func(k string) string { return o.Env[k] },
		Build:          cmdutil.BuildInfo{Version: "v0.0.0-test"},
		PollInterval:   50 * time.Millisecond,
		ActivationWait: 2 * time.Second,
		Name:           "datumctl compute",
		Kubeconfig:     h.Kubeconfig,
		Namespace:      h.Namespace,
	}
	if h.Project != "" {
		f.Project = h.Project
	}
	if o.Factory != nil {
		o.Factory(f)
	}
	return f
}

// Main is the signature of cli.Main, which tests pass in (clitest cannot
// import the root package its users are part of).
type Main func(ctx context.Context, args []string, f *cmdutil.Factory) int

// Run runs args through main with a factory from o.
func (h *Harness) Run(main Main, o RunOptions, args ...string) Result {
	h.T.Helper()
	var stdout, stderr bytes.Buffer
	f := h.Factory(o, &stdout, &stderr)
	ctx := o.Ctx
	if ctx == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
	}
	code := main(ctx, args, f)
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: code}
}

// CreateWorkload creates w in the harness namespace and returns it as
// stored.
func (h *Harness) CreateWorkload(w *computev1alpha.Workload) *computev1alpha.Workload {
	h.T.Helper()
	w = w.DeepCopy()
	w.Namespace = h.Namespace
	if err := h.Client.Create(context.Background(), w); err != nil {
		h.T.Fatalf("create workload %s: %v", w.Name, err)
	}
	return w
}

// Ctx returns a context for test setup.
func (h *Harness) Ctx() context.Context { return context.Background() }

// ForKubeconfig returns a harness for any cluster, such as the local
// platform (`compute-local up` prints its kubeconfig): end-to-end tests
// run the same commands against it. The namespace must exist.
func ForKubeconfig(t testing.TB, kubeconfig, namespace string) *Harness {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: cmdutil.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return &Harness{T: t, Kubeconfig: kubeconfig, Namespace: namespace, Client: c}
}
