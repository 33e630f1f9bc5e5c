package cmdutil

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrTimeout is returned by WatchUntil when its timeout passes first.
var ErrTimeout = errors.New("timed out")

// WatchSource is one kind a wait watches: the objects of List's kind in
// Namespace that match Labels and Fields.
type WatchSource struct {
	// List is an empty list of the kind, e.g. &computev1alpha.InstanceList{}.
	List client.ObjectList
	// Object is an empty object of the kind, e.g. &computev1alpha.Instance{}.
	Object client.Object
	// Namespace limits the watch to one namespace.
	Namespace string
	// Labels filters by label; nil for everything.
	Labels labels.Selector
	// Fields filters by field (metadata.name); nil for everything.
	Fields fields.Selector
}

// Seen is what a wait has seen: per source (in the order of the wait's
// sources) the objects as last observed, sorted by name.
type Seen [][]client.Object

// Wait describes what WatchUntil waits for.
type Wait struct {
	// Timeout ends the wait with ErrTimeout; zero or less means none.
	Timeout time.Duration
	// Sources are the kinds watched.
	Sources []WatchSource
	// Step decides from what was seen whether the wait is over (true) or
	// failed (an error). It runs once every source is listed, after each
	// change, and every poll interval (so elapsed times stay current).
	Step func(seen Seen) (done bool, err error)
	// Reconnecting, when set, hears a short reason while the server cannot
	// be reached or answers with a transient error, and "" once it answers
	// again.
	Reconnecting func(reason string)
}

// WatchUntil watches the wait's sources (list, then watch; informers
// re-list and re-watch with backoff after any failure, so polling is only
// the fallback) and calls Step as described on Wait. Transient errors —
// 429, 5xx, timeouts, refused or reset connections, an API server
// restarting — are retried for as long as the wait lasts and reported to
// Reconnecting; a 401 is retried once, after the token source has dropped
// the rejected token. Only these end the wait: Step's verdict, a permanent
// error (the returned error), the timeout (ErrTimeout) and ctx (its cause,
// ErrInterrupted on Ctrl-C).
func (f *Factory) WatchUntil(ctx context.Context, c client.WithWatch, w Wait) error {
	wctx, stop := context.WithCancel(ctx)
	defer stop()

	h := &health{changed: make(chan struct{}, 1), fatal: make(chan error, 1)}
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	informers := make([]cache.SharedIndexInformer, 0, len(w.Sources))
	for _, src := range w.Sources {
		inf := cache.NewSharedIndexInformer(&listWatch{src: src, c: c, health: h}, src.Object, 0, cache.Indexers{})
		// listWatch classifies and reports every error; the default
		// handler would only log them.
		if err := inf.SetWatchErrorHandlerWithContext(func(context.Context, *cache.Reflector, error) {}); err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
		informers = append(informers, inf)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	for _, inf := range informers {
		wg.Go(func() { inf.RunWithContext(wctx) })
	}

	var deadline <-chan time.Time
	if w.Timeout > 0 {
		t := f.Clock.NewTimer(w.Timeout)
		defer t.Stop()
		deadline = t.C()
	}
	tick := f.Clock.NewTicker(f.Poll())
	defer tick.Stop()
	reported := ""
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-deadline:
			return ErrTimeout
		case err := <-h.fatal:
			return err
		case <-h.changed:
			if reason := h.reason(); reason != reported && w.Reconnecting != nil {
				reported = reason
				w.Reconnecting(reason)
			}
			continue
		case <-changed:
		case <-tick.C():
		}
		if !synced(informers) {
			continue
		}
		done, err := w.Step(seen(informers))
		if err != nil || done {
			return err
		}
	}
}

// synced reports whether every informer has listed its source once.
func synced(informers []cache.SharedIndexInformer) bool {
	for _, inf := range informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// seen copies what the informers hold, sorted by name.
func seen(informers []cache.SharedIndexInformer) Seen {
	out := make(Seen, len(informers))
	for i, inf := range informers {
		for _, o := range inf.GetStore().List() {
			if obj, ok := o.(client.Object); ok {
				out[i] = append(out[i], obj)
			}
		}
		slices.SortFunc(out[i], func(a, b client.Object) int { return cmp.Compare(a.GetName(), b.GetName()) })
	}
	return out
}

// health is the connection state the sources share: the reason the server
// cannot be reached (empty when it can) and the first permanent error.
type health struct {
	mu      sync.Mutex
	why     string
	changed chan struct{}
	fatal   chan error
}

// reason returns why the server cannot be reached; "" when it can.
func (h *health) reason() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.why
}

// observe records the outcome of a list or watch request of a source whose
// consecutive 401s unauthorized counts, and returns err for the reflector
// to back off and retry.
func (h *health) observe(ctx context.Context, unauthorized *int, err error) error {
	if ctx.Err() != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	before := h.why
	switch reason, transient := Transient(err); {
	case err == nil:
		h.why, *unauthorized = "", 0
	case Unauthorized(err):
		// The Datum token source has already retried with a fresh token;
		// other credentials (a kubeconfig's exec plugin) refresh on a 401
		// too: one more round, then give up.
		*unauthorized++
		if *unauthorized > 1 {
			h.fail(WithHints(fmt.Errorf("the server rejected the credentials twice: %w", err),
				"Log in again (datumctl login), or check the credentials of your kubeconfig."))
			return err
		}
		h.why = "the token expired; getting a new one"
	case transient:
		h.why = reason
	default:
		h.fail(err)
		return err
	}
	if h.why != before {
		select {
		case h.changed <- struct{}{}:
		default:
		}
	}
	return err
}

// fail records the first permanent error.
func (h *health) fail(err error) {
	select {
	case h.fatal <- err:
	default:
	}
}

// listWatch lists and watches one source through the controller-runtime
// client, reporting every outcome to health.
type listWatch struct {
	src    WatchSource
	c      client.WithWatch
	health *health

	// unauthorized counts consecutive 401s (the reflector calls List and
	// Watch from one goroutine).
	unauthorized int
}

var (
	_ cache.ListerWatcherWithContext = &listWatch{}
	_ cache.ListerWatcher            = &listWatch{}
)

// options turns the reflector's options into the client's, with the
// source's namespace and selectors.
func (l *listWatch) options(opts metav1.ListOptions) *client.ListOptions {
	if l.src.Labels != nil {
		opts.LabelSelector = l.src.Labels.String()
	}
	if l.src.Fields != nil {
		opts.FieldSelector = l.src.Fields.String()
	}
	return &client.ListOptions{Namespace: l.src.Namespace, Raw: &opts}
}

// ListWithContext lists the source, consistently: the reflector's first
// list asks for any version (resourceVersion=0), which the API server may
// answer from a watch cache that does not hold yet what this command has
// just written — `deploy` creates a Workload and then waits on it, and
// under load that list came back without it ("workload web not found").
// A wait must see its own writes, so such a list reads the latest state
// (resourceVersion unset); later lists and watches keep the reflector's
// exact versions.
func (l *listWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	list, ok := l.src.List.DeepCopyObject().(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("%T is not a list", l.src.List)
	}
	if opts.ResourceVersion == "0" {
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	}
	err := l.c.List(ctx, list, l.options(opts))
	return list, l.health.observe(ctx, &l.unauthorized, err)
}

// WatchWithContext watches the source.
func (l *listWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	list, ok := l.src.List.DeepCopyObject().(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("%T is not a list", l.src.List)
	}
	wi, err := l.c.Watch(ctx, list, l.options(opts))
	return wi, l.health.observe(ctx, &l.unauthorized, err)
}

// List lists the source without a context (the ListerWatcher interface).
func (l *listWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// Watch watches the source without a context (the ListerWatcher interface).
func (l *listWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// IsWatchListSemanticsUnSupported tells the reflector to list, then watch:
// streaming lists need server support a project API proxy may not give.
func (l *listWatch) IsWatchListSemanticsUnSupported() bool { return true }

// WatchList serves -w/--watch on a list: it calls emit with every object
// of src once listed (first true), then with the objects that change (a
// new resourceVersion), until Ctrl-C, which ends it without error.
// Reconnecting is reported on the error stream.
func (f *Factory) WatchList(ctx context.Context, c client.WithWatch, src WatchSource, emit func(objs []client.Object, first bool) error) error {
	printed := map[string]string{}
	first := true
	err := f.WatchUntil(ctx, c, Wait{
		Sources: []WatchSource{src},
		Step: func(seen Seen) (bool, error) {
			var changed []client.Object
			for _, o := range seen[0] {
				key := o.GetNamespace() + "/" + o.GetName()
				if printed[key] != o.GetResourceVersion() {
					printed[key] = o.GetResourceVersion()
					changed = append(changed, o)
				}
			}
			if len(changed) == 0 && !first {
				return false, nil
			}
			err := emit(changed, first)
			first = false
			return false, err
		},
		Reconnecting: func(reason string) {
			if reason != "" {
				_, _ = fmt.Fprintf(f.Streams.ErrOut, "reconnecting… (%s)\n", reason)
			}
		},
	})
	if errors.Is(err, ErrInterrupted) {
		return nil
	}
	return err
}
