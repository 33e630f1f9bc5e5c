package federation

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// karmadaNamespace creates a namespace in the hub and, as Karmada would,
// the same namespace in the cell.
func karmadaNamespace(t *testing.T) string {
	t.Helper()
	name := "ns-" + strings.ToLower(rand.String(8))
	ensureNamespace(t, hubClient, name, nil)
	ensureNamespace(t, cellClient, name, nil)
	return name
}

// deployInHubAndCell creates a hub WorkloadDeployment and, as Karmada would,
// its copy in the cell (when inCell). It returns the hub and cell objects.
func deployInHubAndCell(t *testing.T, namespace, name, city string, inHub bool) (hubWD, cellWD *computev1alpha.WorkloadDeployment) {
	t.Helper()
	cellWD = makeWD(namespace, name, city, 1)
	if err := cellClient.Create(t.Context(), cellWD); err != nil {
		t.Fatalf("failed to create the cell WorkloadDeployment: %v", err)
	}
	if inHub {
		hubWD = makeWD(namespace, name, city, 1)
		if err := hubClient.Create(t.Context(), hubWD); err != nil {
			t.Fatalf("failed to create the hub WorkloadDeployment: %v", err)
		}
	}
	return hubWD, cellWD
}

func TestACellInstanceIsWrittenBackOwnedByItsHubDeployment(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := karmadaNamespace(t)
	hubWD, cellWD := deployInHubAndCell(t, ns, "web-dfw", "DFW", true)
	inst := makeInstance(ns, cellWD, "0")
	g.Expect(cellClient.Create(ctx, inst)).To(Succeed())
	setReady(t, cellClient, inst, metav1.ConditionTrue, computev1alpha.ReasonAvailable)

	t.Log("the hub gets a copy with the Instance's labels, spec and status, owned by the hub WorkloadDeployment")
	back := &computev1alpha.Instance{}
	g.Eventually(func(g Gomega) {
		g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(inst), back)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(back.Status.Conditions, computev1alpha.ConditionReady)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(back.Labels).To(Equal(inst.Labels))
	g.Expect(back.Spec).To(Equal(inst.Spec))
	owner := metav1.GetControllerOf(back)
	g.Expect(owner).NotTo(BeNil())
	g.Expect(owner.UID).To(Equal(hubWD.UID))

	t.Log("a change the copy does not carry (a cell finalizer) writes nothing to the hub")
	g.Eventually(func() error { return addFinalizer(ctx, inst, "test.compute.datumapis.com/hold") }, timeout, interval).Should(Succeed())
	writes := hubWritesFromCell.Load()
	g.Consistently(hubWritesFromCell.Load, 2*time.Second, interval).Should(Equal(writes))

	t.Log("labels set in the hub are kept when the Instance's labels change")
	hubLabelled := back.DeepCopy()
	metav1.SetMetaDataLabel(&hubLabelled.ObjectMeta, "hub.example/kept", "yes")
	g.Expect(hubClient.Patch(ctx, hubLabelled, client.MergeFrom(back))).To(Succeed())
	g.Eventually(func() error {
		cur := &computev1alpha.Instance{}
		if err := cellClient.Get(ctx, client.ObjectKeyFromObject(inst), cur); err != nil {
			return err
		}
		metav1.SetMetaDataLabel(&cur.ObjectMeta, "app", "web")
		return cellClient.Update(ctx, cur)
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) map[string]string {
		g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(inst), back)).To(Succeed())
		return back.Labels
	}, timeout, interval).Should(And(HaveKeyWithValue("app", "web"), HaveKeyWithValue("hub.example/kept", "yes")))

	t.Log("a status change in the cell reaches the copy")
	setReady(t, cellClient, inst, metav1.ConditionFalse, computev1alpha.ReasonImageUnavailable)
	g.Eventually(func(g Gomega) string {
		g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(inst), back)).To(Succeed())
		return meta.FindStatusCondition(back.Status.Conditions, computev1alpha.ConditionReady).Reason
	}, timeout, interval).Should(Equal(computev1alpha.ReasonImageUnavailable))

	t.Log("when the Instance is gone from the cell, its copy is gone from the hub")
	g.Eventually(func() error { return removeFinalizer(ctx, inst, "test.compute.datumapis.com/hold") }, timeout, interval).Should(Succeed())
	g.Expect(cellClient.Delete(ctx, inst)).To(Succeed())
	g.Eventually(gone(hubClient, ns, inst.Name, &computev1alpha.Instance{}), timeout, interval).Should(BeTrue())
}

func TestAnInstanceIsWrittenBackOnlyWhileItsHubDeploymentExists(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := karmadaNamespace(t)
	_, cellWD := deployInHubAndCell(t, ns, "web-lhr", "LHR", false)
	inst := makeInstance(ns, cellWD, "0")
	g.Expect(cellClient.Create(ctx, inst)).To(Succeed())

	t.Log("without a hub WorkloadDeployment nothing is written back")
	g.Consistently(gone(hubClient, ns, inst.Name, &computev1alpha.Instance{}), 2*time.Second, interval).Should(BeTrue())

	t.Log("once it exists, the copy appears")
	hubWD := makeWD(ns, cellWD.Name, "LHR", 1)
	g.Expect(hubClient.Create(ctx, hubWD)).To(Succeed())
	g.Eventually(get(hubClient, ns, inst.Name, &computev1alpha.Instance{}), timeout, interval).Should(Succeed())

	t.Log("deleting the hub WorkloadDeployment lets the hub's garbage collector take the copy, and it is not written again")
	g.Expect(hubClient.Delete(ctx, hubWD)).To(Succeed())
	g.Eventually(gone(hubClient, ns, inst.Name, &computev1alpha.Instance{}), timeout, interval).Should(BeTrue())
	setReady(t, cellClient, inst, metav1.ConditionTrue, computev1alpha.ReasonAvailable)
	g.Consistently(gone(hubClient, ns, inst.Name, &computev1alpha.Instance{}), 2*time.Second, interval).Should(BeTrue())
}

// addFinalizer adds a finalizer to the cell Instance.
func addFinalizer(ctx context.Context, inst *computev1alpha.Instance, f string) error {
	cur := &computev1alpha.Instance{}
	if err := cellClient.Get(ctx, client.ObjectKeyFromObject(inst), cur); err != nil {
		return err
	}
	controllerutil.AddFinalizer(cur, f)
	return cellClient.Update(ctx, cur)
}

// removeFinalizer removes a finalizer from the cell Instance.
func removeFinalizer(ctx context.Context, inst *computev1alpha.Instance, f string) error {
	cur := &computev1alpha.Instance{}
	if err := cellClient.Get(ctx, client.ObjectKeyFromObject(inst), cur); err != nil {
		return err
	}
	controllerutil.RemoveFinalizer(cur, f)
	return cellClient.Update(ctx, cur)
}

func TestARecreatedCellInstanceReplacesItsHubCopy(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := karmadaNamespace(t)
	_, cellWD := deployInHubAndCell(t, ns, "web-dfw", "DFW", true)
	inst := makeInstance(ns, cellWD, "0")
	g.Expect(cellClient.Create(ctx, inst)).To(Succeed())

	back := &computev1alpha.Instance{}
	g.Eventually(func(g Gomega) {
		g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(inst), back)).To(Succeed())
		g.Expect(back.Annotations).To(HaveKeyWithValue(computev1alpha.SourceUIDAnnotation, string(inst.UID)))
		g.Expect(back.Annotations).To(HaveKey(computev1alpha.SourceCreatedAnnotation))
	}, timeout, interval).Should(Succeed())
	firstCopy := back.UID

	t.Log("the cell deletes and recreates the Instance under the same name (a restart): the hub gets a new copy, not the old one updated")
	g.Expect(cellClient.Delete(ctx, inst)).To(Succeed())
	g.Eventually(gone(cellClient, ns, inst.Name, &computev1alpha.Instance{}), timeout, interval).Should(BeTrue())
	recreated := makeInstance(ns, cellWD, "0")
	g.Expect(cellClient.Create(ctx, recreated)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(inst), back)).To(Succeed())
		g.Expect(back.UID).NotTo(Equal(firstCopy))
		g.Expect(back.Annotations).To(HaveKeyWithValue(computev1alpha.SourceUIDAnnotation, string(recreated.UID)))
	}, timeout, interval).Should(Succeed())

	t.Log("a copy still mirroring an earlier Instance (the cell recreated it while the hub was unreachable) is replaced when seen")
	secondCopy := back.UID
	stale := back.DeepCopy()
	stale.Annotations[computev1alpha.SourceUIDAnnotation] = "an-earlier-instance"
	g.Expect(hubClient.Patch(ctx, stale, client.MergeFrom(back))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(inst), back)).To(Succeed())
		g.Expect(back.UID).NotTo(Equal(secondCopy))
		g.Expect(back.Annotations).To(HaveKeyWithValue(computev1alpha.SourceUIDAnnotation, string(recreated.UID)))
	}, timeout, interval).Should(Succeed())
}

// An Instance whose status changes while its copy is being created (the
// provider reporting, the Instance controller writing Ready) is written
// back with one create: the write-back waits for its hub cache to show the
// copy it created instead of creating it again.
func TestInstancesChangingWhileTheirCopiesAreMadeAreCreatedOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := karmadaNamespace(t)
	_, cellWD := deployInHubAndCell(t, ns, "burst-dfw", "DFW", true)
	const n = 20
	creates, refused := hubCreatesFromCell.Load(), hubCreatesRefused.Load()
	insts := make([]*computev1alpha.Instance, n)
	var wg sync.WaitGroup
	for i := range insts {
		insts[i] = makeInstance(ns, cellWD, fmt.Sprint(i))
		wg.Go(func() {
			// Created and then reported on at once, as a busy cell does.
			if err := cellClient.Create(ctx, insts[i]); err != nil {
				t.Errorf("failed to create Instance %s: %v", insts[i].Name, err)
				return
			}
			setReady(t, cellClient, insts[i], metav1.ConditionFalse, computev1alpha.ReasonProvisioning)
			setReady(t, cellClient, insts[i], metav1.ConditionTrue, computev1alpha.ReasonAvailable)
		})
	}
	wg.Wait()
	g.Eventually(func(g Gomega) {
		for _, inst := range insts {
			back := &computev1alpha.Instance{}
			g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(inst), back)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(back.Status.Conditions, computev1alpha.ConditionReady)).To(BeTrue())
		}
	}, timeout, interval).Should(Succeed())
	g.Expect(hubCreatesRefused.Load()-refused).To(BeZero(), "creates the hub answered AlreadyExists")
	g.Expect(hubCreatesFromCell.Load()-creates).To(BeEquivalentTo(n), "creates in the hub, one per Instance")
}
