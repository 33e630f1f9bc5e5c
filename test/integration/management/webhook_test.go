package management

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// diskOf returns a disk volume source in Datum's template shape populated
// from image (none when empty) with the given size.
func diskOf(image, size string) *computev1alpha.DiskTemplateVolumeSource {
	spec := computev1alpha.DiskSpec{
		Resources: &computev1alpha.DiskResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
	}
	if image != "" {
		spec.Populator = &computev1alpha.DiskPopulator{Image: &computev1alpha.ImageDiskPopulator{Name: image}}
	}
	return &computev1alpha.DiskTemplateVolumeSource{Template: &computev1alpha.DiskTemplateVolumeSourceTemplate{Spec: spec}}
}

// sandbox returns the first container of w.
func sandbox(w *computev1alpha.Workload) *computev1alpha.SandboxContainer {
	return &w.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
}

func TestWebhookRejectsInvalidWorkloadsWithFieldPaths(t *testing.T) {
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	bindCity(t, projectA, ns, "LHR", true)
	valid := func() *workloadBuilder { return makeWorkload("app", ns).withPlacement("edge", 1, "DFW") }

	tests := map[string]struct {
		workload *computev1alpha.Workload
		fields   []string
	}{
		"a name that is not a DNS label": {
			workload: valid().with(func(w *computev1alpha.Workload) { w.Name = "app.v2" }).build(),
			fields:   []string{"metadata.name"},
		},
		"a city that is not enabled for the project": {
			workload: valid().with(func(w *computev1alpha.Workload) { w.Spec.Placements[0].CityCodes = []string{"DFW", "SYD"} }).build(),
			fields:   []string{"spec.placements[0].locationSelector.matchExpressions[0].values[1]"},
		},
		"an instance type outside the catalog": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Resources.InstanceType = "datumcloud/d9-huge"
			}).build(),
			fields: []string{"spec.template.spec.runtime.resources.instanceType"},
		},
		"a virtual machine whose boot disk has no image": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "boot", Disk: diskOf("", "10Gi")}}
				w.Spec.Template.Spec.Runtime.Sandbox = nil
				w.Spec.Template.Spec.Runtime.VirtualMachine = &computev1alpha.VirtualMachineRuntime{
					VolumeAttachments: []computev1alpha.VolumeAttachment{{Name: "boot"}},
				}
			}).build(),
			fields: []string{"spec.template.spec.runtime.virtualMachine.volumeAttachments[0].name"},
		},
		"an image with whitespace": {
			workload: valid().with(func(w *computev1alpha.Workload) { sandbox(w).Image = "nginx latest" }).build(),
			fields:   []string{"spec.template.spec.runtime.sandbox.containers[0].image"},
		},
		"an invalid environment variable name": {
			workload: valid().with(func(w *computev1alpha.Workload) { sandbox(w).Env = []computev1alpha.EnvVar{{Name: "1-BAD"}} }).build(),
			fields:   []string{"spec.template.spec.runtime.sandbox.containers[0].env[0].name"},
		},
		"a request above its limit": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				sandbox(w).Resources = &computev1alpha.ContainerResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
					Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
				}
			}).build(),
			fields: []string{"spec.template.spec.runtime.sandbox.containers[0].resources.requests[memory]"},
		},
		"a request for an unsupported resource": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
			}).build(),
			fields: []string{"spec.template.spec.runtime.resources.requests[nvidia.com/gpu]"},
		},
		"two containers on the same port": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Sandbox.Containers = append(w.Spec.Template.Spec.Runtime.Sandbox.Containers,
					computev1alpha.SandboxContainer{Name: "proxy", Image: "envoy", Ports: []computev1alpha.NamedPort{{Name: "proxy", Port: 8080}}})
			}).build(),
			fields: []string{"spec.template.spec.runtime.sandbox.containers[1].ports[0].port"},
		},
		"a port name used by two containers": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Sandbox.Containers = append(w.Spec.Template.Spec.Runtime.Sandbox.Containers,
					computev1alpha.SandboxContainer{Name: "proxy", Image: "envoy", Ports: []computev1alpha.NamedPort{{Name: "http", Port: 9090}}})
			}).build(),
			fields: []string{"spec.template.spec.runtime.sandbox.containers[1].ports[0].name"},
		},
		"an attachment of a volume that does not exist": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				sandbox(w).VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "data", MountPath: ptr.To("/data")}}
			}).build(),
			fields: []string{"spec.template.spec.runtime.sandbox.containers[0].volumeAttachments[0].name"},
		},
		"a relative mount path": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "conf", ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: "c"}}}
				sandbox(w).VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "conf", MountPath: ptr.To("etc/app")}}
			}).build(),
			fields: []string{"spec.template.spec.runtime.sandbox.containers[0].volumeAttachments[0].mountPath"},
		},
		"a virtual machine booting from a config map": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "conf", ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: "c"}}}
				w.Spec.Template.Spec.Runtime.Sandbox = nil
				w.Spec.Template.Spec.Runtime.VirtualMachine = &computev1alpha.VirtualMachineRuntime{
					VolumeAttachments: []computev1alpha.VolumeAttachment{{Name: "conf"}},
				}
			}).build(),
			fields: []string{"spec.template.spec.runtime.virtualMachine.volumeAttachments[0].name"},
		},
		"a disk of size zero": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "data", Disk: diskOf("", "0")}}
				sandbox(w).VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "data", MountPath: ptr.To("/data")}}
			}).build(),
			fields: []string{"spec.template.spec.volumes[0].disk.template.spec.resources.requests[storage]"},
		},
		"a label key reserved for compute": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Metadata.Labels = map[string]string{computev1alpha.CityCodeLabel: "DFW"}
			}).build(),
			fields: []string{"spec.template.metadata.labels[compute.datumapis.com/city-code]"},
		},
		"a restartedAt that is not a time": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Metadata.Annotations = map[string]string{computev1alpha.RestartedAtAnnotation: "yesterday"}
			}).build(),
			fields: []string{"spec.template.metadata.annotations[compute.datumapis.com/restartedAt]"},
		},
		"a template that sets the location": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Location = &computev1alpha.LocationReference{Name: "dfw-1", Namespace: locationNamespace}
			}).build(),
			fields: []string{"spec.template.spec.location"},
		},
		"an image pull secret that is not a valid name": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Runtime.Sandbox.ImagePullSecrets = []computev1alpha.LocalSecretReference{{Name: "Registry_Creds"}}
			}).build(),
			fields: []string{"spec.template.spec.runtime.sandbox.imagePullSecrets[0].name"},
		},
		"a network name used twice": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.NetworkInterfaces = []computev1alpha.InstanceNetworkInterface{
					{Name: "eth0", Network: computev1alpha.NetworkReference{Name: "default"}},
					{Name: "eth1", Network: computev1alpha.NetworkReference{Name: "default"}},
				}
			}).build(),
			fields: []string{"spec.template.spec.networkInterfaces[1].network.name"},
		},
		"a capability outside the cell's grant": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				sandbox(w).SecurityContext = &computev1alpha.SecurityContext{
					Capabilities: &computev1alpha.Capabilities{Add: []computev1alpha.Capability{"NET_BIND_SERVICE", "SYS_ADMIN"}}}
			}).build(),
			fields: []string{"spec.template.spec.runtime.sandbox.containers[0].securityContext.capabilities.add[1]"},
		},
		"an envFrom prefix that is not a C identifier": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				sandbox(w).EnvFrom = []computev1alpha.EnvFromSource{{Prefix: "my-app.", ConfigMapRef: &computev1alpha.ConfigMapEnvSource{Name: "app"}}}
			}).build(),
			fields: []string{"spec.template.spec.runtime.sandbox.containers[0].envFrom[0].prefix"},
		},
		"a runtime class that is not an object name": {
			workload: valid().with(func(w *computev1alpha.Workload) { w.Spec.Template.Spec.Runtime.Class = "Fast_Path" }).build(),
			fields:   []string{"spec.template.spec.runtime.class"},
		},
		"several mistakes at once": {
			workload: valid().with(func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = []string{"SYD"}
				w.Spec.Template.Spec.Runtime.Resources.InstanceType = "big"
				sandbox(w).Image = "a b"
			}).build(),
			fields: []string{
				"spec.placements[0].locationSelector.matchExpressions[0].values[0]",
				"spec.template.spec.runtime.resources.instanceType",
				"spec.template.spec.runtime.sandbox.containers[0].image",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			err := clients[projectA].Create(context.Background(), tc.workload)
			g.Expect(isWebhookDenial(err)).To(gomega.BeTrue(), "want a denial by the validating webhook, got %v", err)
			g.Expect(causeFields(err)).To(gomega.ConsistOf(tc.fields))
		})
	}
}

func TestWebhookNamesTheEnabledCities(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "LHR", true)
	bindCity(t, projectA, ns, "DFW", true)
	err := clients[projectA].Create(context.Background(), makeWorkload("app", ns).withPlacement("edge", 1, "SYD").build())
	g.Expect(isWebhookDenial(err)).To(gomega.BeTrue())
	g.Expect(err.Error()).To(gomega.ContainSubstring("city SYD is not enabled for this project; enabled cities: DFW, LHR"))
}

func TestWebhookRejectsInvalidUpdates(t *testing.T) {
	ns := newNamespace(t, projectB)
	bindCity(t, projectB, ns, "DFW", true)
	w := create(t, projectB, makeWorkload("app", ns).withPlacement("edge", 1, "DFW").build())

	tests := map[string]struct {
		change func(*computev1alpha.Workload)
		fields []string
	}{
		"adding a city that is not enabled": {
			change: func(w *computev1alpha.Workload) { w.Spec.Placements[0].CityCodes = []string{"DFW", "SYD"} },
			fields: []string{"spec.placements[0].locationSelector.matchExpressions[0].values[1]"},
		},
		"switching the runtime to a virtual machine": {
			change: func(w *computev1alpha.Workload) {
				w.Spec.Template.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "boot", Disk: &computev1alpha.DiskTemplateVolumeSource{Image: "ubuntu"}}}
				w.Spec.Template.Spec.Runtime.Sandbox = nil
				w.Spec.Template.Spec.Runtime.VirtualMachine = &computev1alpha.VirtualMachineRuntime{
					VolumeAttachments: []computev1alpha.VolumeAttachment{{Name: "boot"}},
				}
			},
			fields: []string{"spec.template.spec.runtime"},
		},
		"changing the instance management policy": {
			change: func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].ScaleSettings.InstanceManagementPolicy = computev1alpha.ParallelInstanceManagementPolicy
			},
			fields: []string{"spec.placements[0].scaleSettings.instanceManagementPolicy"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			err := tryUpdate(projectB, w, tc.change)
			g.Expect(isWebhookDenial(err)).To(gomega.BeTrue(), "want a denial by the validating webhook, got %v", err)
			g.Expect(causeFields(err)).To(gomega.ConsistOf(tc.fields))
		})
	}
}

func TestWebhookAcceptsAndDefaultsValidWorkloads(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	bindCity(t, projectA, ns, "LHR", true)

	sb := create(t, projectA, makeWorkload("sandboxed", ns).withPlacement("edge", 2, "DFW", "LHR").with(func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Resources.InstanceType = ""
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Ports[0].Protocol = ""
		w.Spec.Template.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "conf", ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: "c"}}}
		sandbox(w).VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "conf", MountPath: ptr.To("/etc/app")}}
		sandbox(w).Env = []computev1alpha.EnvVar{{Name: "MODE", Value: "prod"}}
	}).build())
	g.Expect(sb.Spec.Template.Spec.Runtime.Resources.InstanceType).To(gomega.Equal("datumcloud-d1-standard-2"))
	g.Expect(sb.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Ports[0].Protocol).To(gomega.Equal(corev1.ProtocolTCP))
	g.Expect(sb.Spec.RevisionHistoryLimit).To(gomega.Equal(ptr.To[int32](10)))
	g.Expect(sb.Annotations).To(gomega.HaveKeyWithValue(computev1alpha.TemplateChangedByAnnotation, developer))

	vm := create(t, projectA, makeWorkload("vm", ns).withPlacement("edge", 1, "LHR").with(func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "boot", Disk: &computev1alpha.DiskTemplateVolumeSource{Image: "ubuntu-24.04", Size: ptr.To(resource.MustParse("20Gi"))}}}
		w.Spec.Template.Spec.Runtime.Sandbox = nil
		w.Spec.Template.Spec.Runtime.VirtualMachine = &computev1alpha.VirtualMachineRuntime{
			VolumeAttachments: []computev1alpha.VolumeAttachment{{Name: "boot"}},
			Ports:             []computev1alpha.NamedPort{{Name: "ssh", Port: 22}},
		}
	}).build())
	// The first disk shape moves into Datum's template shape, defaulted.
	g.Expect(vm.Spec.Template.Spec.Volumes[0].Disk).To(gomega.Equal(&computev1alpha.DiskTemplateVolumeSource{
		Template: &computev1alpha.DiskTemplateVolumeSourceTemplate{Spec: computev1alpha.DiskSpec{
			Type:      "pd-standard",
			Resources: &computev1alpha.DiskResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("20Gi")}},
			Populator: &computev1alpha.DiskPopulator{Image: &computev1alpha.ImageDiskPopulator{Name: "ubuntu-24.04"}},
		}},
	}))

	// A metadata-only update by another user does not claim the template.
	update(t, projectA, sb, func(w *computev1alpha.Workload) { w.Labels = map[string]string{"team": "shop"} })
	g.Expect(getWorkload(g, projectA, sb).Annotations).To(gomega.HaveKeyWithValue(computev1alpha.TemplateChangedByAnnotation, developer))
}

func TestProjectedInstancesAreReadOnlyForUsers(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, projectA)
	p := env.Plane(projectA)

	// alice may write Instances as far as RBAC is concerned.
	grantRole(t, ns, "instance-writer", "alice", rbacv1.PolicyRule{APIGroups: []string{"compute.datumapis.com"},
		Resources: []string{"instances", "instances/status"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}})
	alice := clientAs(t, "alice")
	managerCfg, err := p.ClientConfig(managerUser, "system:masters")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	manager := env.ClientFor(managerCfg)

	// alice may not create a projection; the manager may, and its
	// requests do not even reach the guard (a match condition): only
	// alice's create is reviewed.
	reviewed := guardReviews(g, projectA)
	g.Expect(manager.Create(ctx, projection(ns, "web-dfw-0"))).To(gomega.Succeed())
	g.Expect(guardReviews(g, projectA)).To(gomega.Equal(reviewed), "the manager's create was sent to the guard")
	g.Expect(isDenied(alice.Create(ctx, projection(ns, "web-dfw-1")))).To(gomega.BeTrue())
	g.Expect(guardReviews(g, projectA)).To(gomega.Equal(reviewed+1), "alice's create was not reviewed")

	// Nobody else may change or delete it: not alice, not an admin.
	for who, c := range map[string]client.Client{"alice": alice, "an admin": clients[projectA]} {
		inst := &computev1alpha.Instance{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-dfw-0"}, inst)).To(gomega.Succeed())
		before := inst.DeepCopy()
		inst.Labels["edited"] = "true"
		g.Expect(isDenied(c.Patch(ctx, inst, client.MergeFrom(before)))).To(gomega.BeTrue(), "%s patched a projection", who)
		inst = before.DeepCopy()
		inst.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Faked", LastTransitionTime: metav1.Now()}}
		g.Expect(isDenied(c.Status().Update(ctx, inst))).To(gomega.BeTrue(), "%s wrote a projection's status", who)
		g.Expect(isDenied(c.Delete(ctx, before))).To(gomega.BeTrue(), "%s deleted a projection", who)
	}

	// An Instance that is not a projection is none of the guard's business.
	plain := projection(ns, "scratch")
	delete(plain.Labels, computev1alpha.ProjectionLabel)
	g.Expect(alice.Create(ctx, plain)).To(gomega.Succeed())

	// The manager may delete its projection.
	g.Expect(manager.Delete(ctx, projection(ns, "web-dfw-0"))).To(gomega.Succeed())
}

// guardReviews returns how many creates the API server of plane has sent
// to the projection guard, from its own metrics.
func guardReviews(g gomega.Gomega, plane string) int {
	cfg, err := env.Plane(plane).ClientConfig("metrics-reader", "system:masters")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	body, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	g.Expect(err).NotTo(gomega.HaveOccurred())
	n := 0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_admission_webhook_request_total{") ||
			!strings.Contains(line, `name="projection.instances.compute.datumapis.com"`) || !strings.Contains(line, `operation="CREATE"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		n += int(v)
	}
	return n
}

// projection returns a projected Instance as the projector writes it.
func projection(ns, name string) *computev1alpha.Instance {
	inst := &computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			computev1alpha.ProjectionLabel:   "true",
			computev1alpha.WorkloadNameLabel: "web",
			computev1alpha.CityCodeLabel:     "DFW",
		}},
	}
	inst.Spec.Runtime.Resources.InstanceType = "datumcloud/d1-standard-2"
	inst.Spec.Runtime.Sandbox = &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: "nginx"}}}
	return inst
}

// isDenied reports whether err is the projection guard's denial.
func isDenied(err error) bool {
	return err != nil && strings.Contains(err.Error(), `admission webhook "projection.instances.compute.datumapis.com" denied the request`)
}

// TestAWorkloadMayOnlyReferenceWhatItsAuthorMayRead: nobody can reach a
// Secret they could not read by having a Workload deliver it to instances.
func TestAWorkloadMayOnlyReferenceWhatItsAuthorMayRead(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	admin := env.Client(projectA)
	g.Expect(admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(gomega.Succeed())
	g.Expect(admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}})).To(gomega.Succeed())
	// bob may write Workloads and read the ConfigMap, not the Secret.
	grantRole(t, ns, "workload-writer", "bob",
		rbacv1.PolicyRule{APIGroups: []string{"compute.datumapis.com"}, Resources: []string{"workloads"}, Verbs: []string{"get", "create", "update", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"app"}, Verbs: []string{"get"}})
	bob := clientAs(t, "bob")

	withRefs := func(name string) *computev1alpha.Workload {
		w := makeWorkload(name, ns).withPlacement("edge", 1, "DFW").build()
		w.Spec.Template.Spec.Volumes = append(w.Spec.Template.Spec.Volumes,
			computev1alpha.InstanceVolume{Name: "cfg", ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: "app"}})
		sandbox(w).Env = append(sandbox(w).Env, computev1alpha.EnvVar{Name: "PW", ValueFrom: &computev1alpha.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "pw"}}})
		return w
	}
	err := bob.Create(ctx, withRefs("web"))
	g.Expect(isWebhookDenial(err)).To(gomega.BeTrue(), "bob referenced a Secret he cannot read: %v", err)
	g.Expect(err.Error()).To(gomega.And(
		gomega.ContainSubstring("spec.template.spec.runtime.sandbox.containers[0].env[0].valueFrom.secretKeyRef.name"),
		gomega.ContainSubstring("SourceUnauthorized: bob may not get Secret db"),
	))
	g.Expect(err.Error()).NotTo(gomega.ContainSubstring("ConfigMap app"), "the ConfigMap bob may read was refused too")

	// A whole Secret read as environment is delivered like a key: bob may
	// not reach it either.
	whole := makeWorkload("whole", ns).withPlacement("edge", 1, "DFW").build()
	sandbox(whole).EnvFrom = []computev1alpha.EnvFromSource{
		{ConfigMapRef: &computev1alpha.ConfigMapEnvSource{Name: "app"}},
		{Prefix: "DB_", SecretRef: &computev1alpha.SecretEnvSource{Name: "db"}},
	}
	err = bob.Create(ctx, whole)
	g.Expect(isWebhookDenial(err)).To(gomega.BeTrue(), "bob read a whole Secret he cannot read: %v", err)
	g.Expect(err.Error()).To(gomega.And(
		gomega.ContainSubstring("spec.template.spec.runtime.sandbox.containers[0].envFrom[1].secretRef.name"),
		gomega.ContainSubstring("SourceUnauthorized: bob may not get Secret db"),
	))
	g.Expect(err.Error()).NotTo(gomega.ContainSubstring("ConfigMap app"), "the ConfigMap bob may read was refused too")

	// Once bob may read it, the same Workload is accepted.
	grantRole(t, ns, "db-reader", "bob",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db"}, Verbs: []string{"get"}})
	g.Eventually(func() error { return bob.Create(ctx, withRefs("web")) }, "10s", "200ms").Should(gomega.Succeed())
}
