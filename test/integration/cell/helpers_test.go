package cell

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// writeCounter counts write requests (anything but GET, HEAD and OPTIONS;
// lists and watches are GETs) per namespace.
type writeCounter struct {
	mu           sync.Mutex
	perNamespace map[string]int
}

func newWriteCounter() *writeCounter {
	return &writeCounter{perNamespace: map[string]int{}}
}

// wrap is a rest.Config WrapTransport that counts.
func (c *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		switch req.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			c.mu.Lock()
			c.perNamespace[namespaceOf(req.URL.Path)]++
			c.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// in returns the writes made so far in a namespace.
func (c *writeCounter) in(ns string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.perNamespace[ns]
}

// namespaceOf returns the namespace a request path addresses, or "".
func namespaceOf(path string) string {
	parts := strings.Split(path, "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" {
			return parts[i+1]
		}
	}
	return ""
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cell-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("failed to create namespace: %v", err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = k8s.Delete(context.Background(), ns)
		}
	})
	return ns.Name
}

// wdBuilder builds WorkloadDeployments.
type wdBuilder struct {
	wd *computev1alpha.WorkloadDeployment
}

// makeWD returns an OrderedReady deployment of one replica in DFW.
func makeWD(ns, name string) *wdBuilder {
	return &wdBuilder{wd: &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: computev1alpha.WorkloadDeploymentSpec{
			WorkloadRef:   computev1alpha.WorkloadReference{Name: name, UID: types.UID("workload-" + name)},
			PlacementName: "default",
			CityCode:      "DFW",
			Template: computev1alpha.InstanceTemplateSpec{
				Metadata: computev1alpha.TemplateMetadata{Labels: map[string]string{"app": name}},
				Spec: computev1alpha.InstanceSpec{
					Runtime: computev1alpha.InstanceRuntimeSpec{
						Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
						Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
							Name: "app", Image: "ghcr.io/citycells/hello:1.0",
						}}},
					},
				},
			},
			ScaleSettings: computev1alpha.HorizontalScaleSettings{
				MinReplicas:              1,
				InstanceManagementPolicy: computev1alpha.OrderedReadyInstanceManagementPolicy,
			},
		},
	}}
}

func (b *wdBuilder) replicas(n int32) *wdBuilder {
	b.wd.Spec.Replicas = ptr.To(n)
	return b
}

func (b *wdBuilder) parallel() *wdBuilder {
	b.wd.Spec.ScaleSettings.InstanceManagementPolicy = computev1alpha.ParallelInstanceManagementPolicy
	return b
}

func (b *wdBuilder) templateAnnotation(k, v string) *wdBuilder {
	if b.wd.Spec.Template.Metadata.Annotations == nil {
		b.wd.Spec.Template.Metadata.Annotations = map[string]string{}
	}
	b.wd.Spec.Template.Metadata.Annotations[k] = v
	return b
}

// create creates the deployment and returns it.
func (b *wdBuilder) create(t *testing.T) *computev1alpha.WorkloadDeployment {
	t.Helper()
	if err := k8s.Create(context.Background(), b.wd); err != nil {
		t.Fatalf("failed to create WorkloadDeployment: %v", err)
	}
	return b.wd
}

// getWD reads a deployment.
func getWD(g Gomega, wd *computev1alpha.WorkloadDeployment) *computev1alpha.WorkloadDeployment {
	got := &computev1alpha.WorkloadDeployment{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(wd), got)).To(Succeed())
	return got
}

// instancesIn lists the Instances of a namespace, sorted by name.
func instancesIn(g Gomega, ns string) []computev1alpha.Instance {
	list := &computev1alpha.InstanceList{}
	g.Expect(k8s.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	slices.SortFunc(list.Items, func(a, b computev1alpha.Instance) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// names returns the names of Instances.
func names(insts []computev1alpha.Instance) []string {
	out := make([]string, 0, len(insts))
	for _, i := range insts {
		out = append(out, i.Name)
	}
	return out
}

// uids maps Instance names to UIDs.
func uids(insts []computev1alpha.Instance) map[string]types.UID {
	out := map[string]types.UID{}
	for _, i := range insts {
		out[i.Name] = i.UID
	}
	return out
}

// condition returns a condition or an empty one.
func condition(conds []metav1.Condition, t string) metav1.Condition {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// expectConverged asserts that a deployment has every desired replica
// ready and up to date, that its status reports so for its latest
// generation, and returns it.
func expectConverged(g Gomega, wd *computev1alpha.WorkloadDeployment, n int32) *computev1alpha.WorkloadDeployment {
	got := getWD(g, wd)
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation), "observedGeneration")
	g.Expect(got.Status.ReplicaCounts).To(Equal(computev1alpha.ReplicaCounts{
		Replicas: n, CurrentReplicas: n, UpdatedReplicas: n, ReadyReplicas: n, DesiredReplicas: n,
	}))
	g.Expect(condition(got.Status.Conditions, computev1alpha.ConditionReplicasReady).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(condition(got.Status.Conditions, computev1alpha.ConditionProgressing).Reason).To(Equal(computev1alpha.ReasonRolloutComplete))
	insts := instancesIn(g, wd.Namespace)
	g.Expect(insts).To(HaveLen(int(n)))
	return got
}

// ordinal returns an Instance's instance-index, or -1.
func ordinal(i *computev1alpha.Instance) int {
	n, err := strconv.Atoi(i.Labels[computev1alpha.InstanceIndexLabel])
	if err != nil {
		return -1
	}
	return n
}

// isReady reports whether an Instance is Ready and not being deleted.
func isReady(i *computev1alpha.Instance) bool {
	return i.DeletionTimestamp == nil && meta.IsStatusConditionTrue(i.Status.Conditions, computev1alpha.ConditionReady)
}

// instanceWatch records every Instance event of a namespace in order.
type instanceWatch struct {
	mu     sync.Mutex
	events []watch.Event
	stop   func()
	done   chan struct{}
}

// watchInstances starts recording; existing Instances arrive as Added.
func watchInstances(t *testing.T, ns string) *instanceWatch {
	t.Helper()
	w, err := k8s.Watch(context.Background(), &computev1alpha.InstanceList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatalf("failed to watch Instances: %v", err)
	}
	iw := &instanceWatch{stop: w.Stop, done: make(chan struct{})}
	go func() {
		defer close(iw.done)
		for ev := range w.ResultChan() {
			if _, ok := ev.Object.(*computev1alpha.Instance); !ok {
				continue
			}
			iw.mu.Lock()
			iw.events = append(iw.events, ev)
			iw.mu.Unlock()
		}
	}()
	t.Cleanup(iw.close)
	return iw
}

// close stops recording.
func (iw *instanceWatch) close() {
	iw.stop()
	<-iw.done
}

// replay applies the recorded events in order to a map of the Instances
// that exist, calling check after each event with the state it produced.
// It returns the first error check returns.
func (iw *instanceWatch) replay(check func(ev watch.Event, state map[string]*computev1alpha.Instance) error) error {
	iw.mu.Lock()
	events := slices.Clone(iw.events)
	iw.mu.Unlock()
	state := map[string]*computev1alpha.Instance{}
	for _, ev := range events {
		inst := ev.Object.(*computev1alpha.Instance)
		if ev.Type == watch.Deleted {
			delete(state, inst.Name)
		} else {
			state[inst.Name] = inst
		}
		if err := check(ev, state); err != nil {
			return err
		}
	}
	return nil
}
