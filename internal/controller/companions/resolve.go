package companions

import (
	"cmp"
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/referenceddata"
)

// source is one referenced object as read from the project plane.
type source struct {
	// companion is the object's copy for the federation namespace; nil when
	// it could not be read.
	companion client.Object
	// hash and size are its content's.
	hash string
	size int
	// missing is set when it does not exist.
	missing bool
	// problem is why it cannot be delivered ("Reason: message"), empty
	// when it can (or is missing: the caller decides, by optional).
	problem string
}

// outcome is what a pass resolved for one deployment.
type outcome struct {
	// expected is what its cell must hold.
	expected referenceddata.Expected
	// companions are the companions it needs written, and sizes their
	// data's bytes.
	companions []client.Object
	sizes      []int
	// keep are the tokens of objects that cannot be read now whose
	// existing companions stay, so running Instances keep their data.
	keep []string
	// err is the resolution error ("Reason: message"), empty when none.
	err string
	// condition is its ReferencedDataReady condition.
	condition metav1.Condition
}

// resolve reads what wd references and decides its outcome.
func (s *pass) resolve(ctx context.Context, wd *computev1alpha.WorkloadDeployment) outcome {
	var o outcome
	o.expected.Resolved = true
	o.expected.Hashes = map[string]string{}
	// The hash the deployment records, in the spelling it was recorded in
	// while that still names its template (names.TemplateHashes): an
	// upgrade rewrites no annotation of an unchanged deployment.
	o.expected.TemplateHash = names.HashesOf(&wd.Spec.Template).Keep(
		wd.Annotations[computev1alpha.ReferencedDataTemplateHashAnnotation])
	total := 0
	for _, ref := range referenceddata.Refs(&wd.Spec.Template.Spec) {
		src := s.read(ctx, ref)
		t := ref.Token()
		switch {
		case src.missing && ref.Optional:
			continue
		case src.missing:
			o.keep = append(o.keep, t)
			o.err = cmp.Or(o.err, reasonMessage(computev1alpha.ReasonSourceNotFound,
				"%s %s does not exist in namespace %s: create it, or mark the reference optional", ref.Kind, ref.Name, s.namespace))
			continue
		case src.problem != "":
			o.keep = append(o.keep, t)
			o.err = cmp.Or(o.err, src.problem)
			continue
		}
		o.expected.Tokens = append(o.expected.Tokens, t)
		o.expected.Hashes[t] = src.hash
		o.companions = append(o.companions, src.companion)
		o.sizes = append(o.sizes, src.size)
		total += src.size
	}
	if total > referenceddata.MaxDeploymentBytes && o.err == "" {
		o.err = reasonMessage(computev1alpha.ReasonSourceTooLarge,
			"the referenced data of WorkloadDeployment %s is %d bytes, over the limit of %d (1 MiB): reference less, or smaller objects",
			wd.Name, total, referenceddata.MaxDeploymentBytes)
	}
	o.condition = condition(o)
	return o
}

// budget is what a pass has let into the federation namespace so far:
// the bytes of the companions desired, each counted once.
type budget struct {
	used int
	seen map[string]bool
}

// admit reports whether o's companions fit the namespace's budget
// (referenceddata.MaxNamespaceBytes) beside those admitted before, and
// counts them when they do; the bytes they would make otherwise.
func (b *budget) admit(o outcome) (bool, int) {
	added := 0
	for i, c := range o.companions {
		if !b.seen[c.GetName()] {
			added += o.sizes[i]
		}
	}
	if b.used+added > referenceddata.MaxNamespaceBytes {
		return false, b.used + added
	}
	b.used += added
	for _, c := range o.companions {
		b.seen[c.GetName()] = true
	}
	return true, b.used
}

// overBudget is o refused for the namespace's budget: its companions are
// not written (those it had stay, so its running Instances keep their
// data) and its condition says why.
func overBudget(o outcome, wd *computev1alpha.WorkloadDeployment, bytes int) outcome {
	o.err = reasonMessage(computev1alpha.ReasonSourceTooLarge,
		"the referenced data of namespace %s would be %d bytes with WorkloadDeployment %s's, over the namespace's budget of %d (8 MiB): reference less, or share objects between deployments",
		wd.Namespace, bytes, wd.Name, referenceddata.MaxNamespaceBytes)
	o.keep = append(o.keep, o.expected.Tokens...)
	o.companions, o.sizes = nil, nil
	o.condition = condition(o)
	return o
}

// condition is the ReferencedDataReady condition of an outcome.
func condition(o outcome) metav1.Condition {
	if o.err != "" {
		reason, msg := referenceddata.SplitError(o.err)
		return metav1.Condition{Type: computev1alpha.ConditionReferencedDataReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	msg := "the template references no ConfigMap or Secret"
	if n := len(o.expected.Tokens); n > 0 {
		msg = fmt.Sprintf("%d referenced objects copied to the federation plane: %s", n, describe(o.expected.Tokens))
	}
	return metav1.Condition{Type: computev1alpha.ConditionReferencedDataReady, Status: metav1.ConditionTrue,
		Reason: computev1alpha.ReasonReferencedDataReady, Message: msg}
}

// read reads the object of ref once per pass, with a direct GET: only the
// objects referenced are ever read, and never from a cache of every
// Secret.
func (s *pass) read(ctx context.Context, ref referenceddata.Ref) *source {
	if src, ok := s.sources[ref.Token()]; ok {
		return src
	}
	src := s.fetch(ctx, ref)
	s.sources[ref.Token()] = src
	return src
}

// fetch reads the object of ref and builds its companion.
func (s *pass) fetch(ctx context.Context, ref referenceddata.Ref) *source {
	key := client.ObjectKey{Namespace: s.namespace, Name: ref.Name}
	var (
		obj  client.Object
		data map[string][]byte
	)
	switch ref.Kind {
	case referenceddata.KindSecret:
		sec := &corev1.Secret{}
		obj = sec
		if err := s.reader.Get(ctx, key, sec); err != nil {
			return fetchProblem(ref, err)
		}
		data = sec.Data
	default:
		cm := &corev1.ConfigMap{}
		obj = cm
		if err := s.reader.Get(ctx, key, cm); err != nil {
			return fetchProblem(ref, err)
		}
		data = maps.Clone(cm.BinaryData)
		if data == nil {
			data = map[string][]byte{}
		}
		for k, v := range cm.Data {
			data[k] = []byte(v)
		}
	}
	size := 0
	for k, v := range data {
		size += len(k) + len(v)
	}
	if size > referenceddata.MaxObjectBytes {
		return &source{problem: reasonMessage(computev1alpha.ReasonSourceTooLarge,
			"%s %s holds %d bytes, over the limit of %d (256 KiB) for referenced data", ref.Kind, ref.Name, size, referenceddata.MaxObjectBytes)}
	}
	hash := referenceddata.SourceVersion(string(obj.GetUID()), obj.GetResourceVersion())
	return &source{companion: s.companionOf(ref, obj, hash), hash: hash, size: size}
}

// fetchProblem turns a failed read into a source.
func fetchProblem(ref referenceddata.Ref, err error) *source {
	switch {
	case apierrors.IsNotFound(err):
		return &source{missing: true}
	case apierrors.IsForbidden(err):
		return &source{problem: reasonMessage(computev1alpha.ReasonSourceUnauthorized,
			"the management plane may not read %s %s: %s", ref.Kind, ref.Name, err)}
	}
	return &source{problem: reasonMessage(computev1alpha.ReasonResolving, "cannot read %s %s yet: %s", ref.Kind, ref.Name, err)}
}

// companionOf builds the companion of obj in the federation namespace.
func (s *pass) companionOf(ref referenceddata.Ref, obj client.Object, hash string) client.Object {
	om := metav1.ObjectMeta{
		Name:      referenceddata.CompanionName(ref.Kind, ref.Name),
		Namespace: s.hubNamespace,
		Labels: map[string]string{
			computev1alpha.ReferencedDataLabel:      computev1alpha.ReferencedDataLabelValue,
			computev1alpha.UpstreamClusterNameLabel: names.UpstreamClusterName(s.cluster),
			computev1alpha.UpstreamNamespaceLabel:   s.namespace,
		},
		Annotations: map[string]string{
			computev1alpha.ReferencedDataHashAnnotation:   hash,
			computev1alpha.ReferencedDataSourceAnnotation: ref.Token(),
		},
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		return &corev1.Secret{ObjectMeta: om, Type: o.Type, Data: o.Data}
	case *corev1.ConfigMap:
		return &corev1.ConfigMap{ObjectMeta: om, Data: o.Data, BinaryData: o.BinaryData}
	}
	return nil
}

// sameCompanion reports whether existing already carries desired: the same
// source version and labels.
func sameCompanion(existing, desired client.Object) bool {
	return existing.GetAnnotations()[computev1alpha.ReferencedDataHashAnnotation] == desired.GetAnnotations()[computev1alpha.ReferencedDataHashAnnotation] &&
		existing.GetAnnotations()[computev1alpha.ReferencedDataSourceAnnotation] == desired.GetAnnotations()[computev1alpha.ReferencedDataSourceAnnotation] &&
		maps.Equal(existing.GetLabels(), desired.GetLabels())
}
