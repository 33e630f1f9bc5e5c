// Package patch is the one way compute's controllers write status: compute
// the new status on a copy of what was read, and send a merge patch only
// when something changed.
//
// The rules are the same for every controller:
//
//   - no change, no request: a reconcile that observes nothing new writes
//     nothing (no hot loops, no empty patches);
//   - NotFound is done: the object was deleted while the reconcile ran, so
//     there is no status left to report and nothing to retry — the
//     deletion brings its own event;
//   - a conflict (only possible with WithOptimisticLock) and every other
//     error is returned, so the reconcile is retried with backoff.
package patch

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Option changes how Status patches.
type Option func(*options)

type options struct {
	optimisticLock bool
}

// WithOptimisticLock makes the patch carry the resourceVersion the status
// was computed from: when the object changed meanwhile, the write fails
// with a conflict instead of landing on a newer state.
func WithOptimisticLock() Option {
	return func(o *options) { o.optimisticLock = true }
}

// Status applies mutate to obj (which must only change its status) and
// patches the status subresource when the object differs from before. It
// reports whether a write was sent and accepted; obj holds the server's
// answer then. A NotFound answer means the object is gone: Status reports
// no write and no error.
func Status[T client.Object](ctx context.Context, c client.StatusClient, obj T, mutate func(T), opts ...Option) (bool, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	before, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return false, fmt.Errorf("%T cannot be copied as a client.Object", obj)
	}
	mutate(obj)
	if equality.Semantic.DeepEqual(before, obj) {
		return false, nil
	}
	p := client.MergeFrom(before)
	if o.optimisticLock {
		p = client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	}
	if err := c.Status().Patch(ctx, obj, p); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("failed to patch the status of %s %s: %w", kindOf(obj), client.ObjectKeyFromObject(obj), err)
	}
	return true, nil
}

// kindOf names obj's kind for error messages: the Go type's name, since
// typed objects read from a cache carry no TypeMeta.
func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
