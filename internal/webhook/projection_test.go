package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestProjectionWriteAllowed(t *testing.T) {
	writers := Identities{Users: []string{"projector"}, Groups: []string{"compute:managers"}}
	tests := map[string]struct {
		op      admissionv1.Operation
		user    authenticationv1.UserInfo
		manager string
		want    bool
	}{
		"the manager may create": {
			op: admissionv1.Create, user: user("compute-manager"), manager: "compute-manager", want: true,
		},
		"the manager may delete": {
			op: admissionv1.Delete, user: user("compute-manager"), manager: "compute-manager", want: true,
		},
		"a configured writer may update": {
			op: admissionv1.Update, user: user("projector"), want: true,
		},
		"a member of a writer group may update": {
			op: admissionv1.Update, user: user("bob", "compute:managers"), want: true,
		},
		"a user may not create": {
			op: admissionv1.Create, user: user("alice", "system:authenticated"), manager: "compute-manager",
		},
		"a user may not update": {
			op: admissionv1.Update, user: user("alice"), manager: "compute-manager",
		},
		"a cluster admin may not update": {
			op: admissionv1.Update, user: user("admin", "system:masters"), manager: "compute-manager",
		},
		"a user may not delete": {
			op: admissionv1.Delete, user: user("alice"), manager: "compute-manager",
		},
		"the garbage collector may delete": {
			op: admissionv1.Delete, user: user("system:serviceaccount:kube-system:generic-garbage-collector"), manager: "m", want: true,
		},
		"the garbage collector may not update": {
			op: admissionv1.Update, user: user("system:serviceaccount:kube-system:generic-garbage-collector"), manager: "m",
		},
		"an unknown manager identity grants nothing to an anonymous user": {
			op: admissionv1.Create, user: user(""), manager: "",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ProjectionWriteAllowed(tc.op, tc.user, tc.manager, writers, DefaultProjectionDeleters); got != tc.want {
				t.Fatalf("ProjectionWriteAllowed() = %v, want %v", got, tc.want)
			}
		})
	}
}

func user(name string, groups ...string) authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Username: name, Groups: groups}
}

// fakeCluster is a project cluster whose manager identity is already
// known to the guard's cache; nothing else of it is used.
type fakeCluster struct {
	cluster.Cluster
	cfg *rest.Config
}

func (f fakeCluster) GetConfig() *rest.Config { return f.cfg }

// fakeClusters resolves every name to one fakeCluster.
type fakeClusters struct{ cl fakeCluster }

func (f fakeClusters) GetCluster(context.Context, string) (cluster.Cluster, error) { return f.cl, nil }

// newGuard returns a guard for which the manager is "compute-manager".
func newGuard() *projectionGuard {
	cl := fakeCluster{cfg: &rest.Config{}}
	g := &projectionGuard{clusters: fakeClusters{cl}, deleters: DefaultProjectionDeleters, identities: newIdentityCache()}
	g.identities.users[cl.cfg] = "compute-manager"
	return g
}

// instanceJSON returns an Instance with labels as JSON.
func instanceJSON(labels map[string]string) []byte {
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"name": "web-dfw-0", "labels": labels}})
	if err != nil {
		panic(err)
	}
	return b
}

func TestProjectionGuard(t *testing.T) {
	projected := instanceJSON(map[string]string{computev1alpha.ProjectionLabel: "true", computev1alpha.WorkloadNameLabel: "web"})
	plain := instanceJSON(map[string]string{"app": "web"})
	tests := map[string]struct {
		op          admissionv1.Operation
		user        string
		object, old []byte
		want        bool
		wantMessage string
	}{
		"a plain instance is not guarded":          {op: admissionv1.Create, user: "alice", object: plain, want: true},
		"the manager writes a projection":          {op: admissionv1.Update, user: "compute-manager", object: projected, old: projected, want: true},
		"a user may not create a projection":       {op: admissionv1.Create, user: "alice", object: projected, wantMessage: "change Workload web instead"},
		"removing the projection label is a write": {op: admissionv1.Update, user: "alice", object: plain, old: projected},
		"adding the projection label is a write":   {op: admissionv1.Update, user: "alice", object: projected, old: plain},
		"a user may not delete a projection":       {op: admissionv1.Delete, user: "alice", old: projected},
		"the namespace controller may delete it":   {op: admissionv1.Delete, user: "system:serviceaccount:kube-system:namespace-controller", old: projected, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Name: "web-dfw-0", Operation: tc.op, UserInfo: user(tc.user),
				Object: runtime.RawExtension{Raw: tc.object}, OldObject: runtime.RawExtension{Raw: tc.old},
			}}
			resp := newGuard().Handle(withCluster(context.Background(), "project-a"), req)
			if resp.Allowed != tc.want {
				t.Fatalf("allowed = %v, want %v (%v)", resp.Allowed, tc.want, resp.Result)
			}
			if tc.wantMessage != "" && !strings.Contains(resp.Result.Message, tc.wantMessage) {
				t.Fatalf("message %q does not say %q", resp.Result.Message, tc.wantMessage)
			}
		})
	}
}

// FuzzProjectionGuard feeds the guard arbitrary objects and users: it never
// panics, lets through what is not a projection, and lets a projection be
// written only by the manager (or deleted by a deleter).
func FuzzProjectionGuard(f *testing.F) {
	f.Add("CREATE", "alice", instanceJSON(map[string]string{computev1alpha.ProjectionLabel: "true"}), []byte(nil))
	f.Add("DELETE", "system:kube-controller-manager", []byte(nil), instanceJSON(map[string]string{computev1alpha.ProjectionLabel: ""}))
	f.Add("UPDATE", "compute-manager", []byte(`{"metadata":{"labels":{"a":"b"}}}`), []byte(`{"metadata":`))
	guard := newGuard()
	f.Fuzz(func(t *testing.T, op, name string, object, old []byte) {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Operation(op), UserInfo: user(name),
			Object: runtime.RawExtension{Raw: object}, OldObject: runtime.RawExtension{Raw: old},
		}}
		resp := guard.Handle(withCluster(context.Background(), "p"), req)
		newMeta, errNew := objectMeta(object)
		oldMeta, errOld := objectMeta(old)
		switch {
		case errNew != nil || errOld != nil:
			if resp.Allowed {
				t.Fatal("an undecodable object was admitted")
			}
		case !isProjection(newMeta) && !isProjection(oldMeta):
			if !resp.Allowed {
				t.Fatalf("a write to a plain instance was denied: %v", resp.Result)
			}
		case resp.Allowed:
			deleter := admissionv1.Operation(op) == admissionv1.Delete && matches(user(name), DefaultProjectionDeleters)
			if name != "compute-manager" && !deleter {
				t.Fatalf("%q was allowed to %s a projection", name, op)
			}
		}
	})
}
