package management

import (
	"context"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// TestWebhookRefusesContainersLargerThanTheirInstanceType: the project
// plane's webhook refuses a container stating, by requests only, more than
// its instance type has (issue 39: such a Pod would get 16 CPU while its
// claim was sized by the type), naming each field and the type's size,
// and admits one that fits.
func TestWebhookRefusesContainersLargerThanTheirInstanceType(t *testing.T) {
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	requestsOnly := func(name, cpu, mem string) *computev1alpha.Workload {
		return makeWorkload(name, ns).withPlacement("edge", 1, "DFW").with(func(w *computev1alpha.Workload) {
			sandbox(w).Resources = &computev1alpha.ContainerResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}
		}).build()
	}
	g := gomega.NewWithT(t)

	err := clients[projectA].Create(context.Background(), requestsOnly("big", "16", "64Gi"))
	g.Expect(isWebhookDenial(err)).To(gomega.BeTrue(), "want a denial by the validating webhook, got %v", err)
	g.Expect(causeFields(err)).To(gomega.ConsistOf(
		"spec.template.spec.runtime.sandbox.containers[0].resources.requests.cpu",
		"spec.template.spec.runtime.sandbox.containers[0].resources.requests.memory"))
	for _, want := range []string{
		`container "app" asks for 16 cpu, more than the instance's 1 cpu (instance type datumcloud/d1-standard-2)`,
		`asks for 64Gi memory, more than the instance's 2Gi memory`,
		"lower it or choose a larger instance type",
	} {
		g.Expect(err.Error()).To(gomega.ContainSubstring(want))
	}

	// Two containers that each fit but not together: the second is named.
	err = clients[projectA].Create(context.Background(), makeWorkload("pair", ns).withPlacement("edge", 1, "DFW").with(func(w *computev1alpha.Workload) {
		sandbox(w).Resources = &computev1alpha.ContainerResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m")}}
		w.Spec.Template.Spec.Runtime.Sandbox.Containers = append(w.Spec.Template.Spec.Runtime.Sandbox.Containers, computev1alpha.SandboxContainer{
			Name: "side", Image: "envoy", Resources: &computev1alpha.ContainerResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m")}}})
	}).build())
	g.Expect(isWebhookDenial(err)).To(gomega.BeTrue(), "want a denial by the validating webhook, got %v", err)
	g.Expect(causeFields(err)).To(gomega.ConsistOf("spec.template.spec.runtime.sandbox.containers[1].resources.requests.cpu"))
	g.Expect(err.Error()).To(gomega.ContainSubstring(`containers "app", "side" together ask for 1200m cpu`))

	ok := requestsOnly("small", "500m", "1Gi")
	g.Expect(clients[projectA].Create(context.Background(), ok)).To(gomega.Succeed())
	t.Cleanup(func() { _ = clients[projectA].Delete(context.Background(), ok) })
	// Growing it past the type is refused like a new one.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		grown := &computev1alpha.Workload{}
		if err := clients[projectA].Get(context.Background(), client.ObjectKeyFromObject(ok), grown); err != nil {
			return err
		}
		sandbox(grown).Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
		return clients[projectA].Update(context.Background(), grown)
	})
	g.Expect(isWebhookDenial(err)).To(gomega.BeTrue(), "want a denial by the validating webhook, got %v", err)
	g.Expect(strings.Join(causeFields(err), " ")).To(gomega.Equal("spec.template.spec.runtime.sandbox.containers[0].resources.requests.cpu"))
}
