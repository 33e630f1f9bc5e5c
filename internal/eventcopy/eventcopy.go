// Package eventcopy carries an Instance's events from plane to plane: a
// cell's Pod events to the federation plane (internal/controller/podevents)
// and from there to the project (internal/controller/projector). A copy is
// a core/v1 Event of the receiving plane with a deterministic name (its
// source's), so carrying it again updates it instead of adding another
// event: the count, the last time seen and the message follow the source's,
// and nothing is written when they already agree. Events expire in every
// plane with the API server's event TTL; copies are never deleted.
package eventcopy

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxMessage is the longest message a copy keeps (the events.k8s.io
// limit of a note), cut with an ellipsis.
const MaxMessage = 1024

// Times returns when src was first and last seen and how often: the
// legacy fields of a core/v1 event, or those of an events.k8s.io one
// (eventTime, series).
func Times(src *corev1.Event) (first, last metav1.Time, count int32) {
	first, last, count = src.FirstTimestamp, src.LastTimestamp, src.Count
	if first.IsZero() {
		first = metav1.NewTime(src.EventTime.Time)
	}
	if last.IsZero() {
		last = first
		if src.Series != nil && !src.Series.LastObservedTime.IsZero() {
			last = metav1.NewTime(src.Series.LastObservedTime.Time)
		}
	}
	if count == 0 {
		count = 1
		if src.Series != nil && src.Series.Count > 0 {
			count = src.Series.Count
		}
	}
	return first, last, count
}

// Copy returns the copy of src named name in namespace, about regarding,
// with labels, reported by reporter (a controller name) from instance.
// The copy is a legacy core/v1 event (count, first and last timestamps),
// whatever API src was written with; the source's host is not carried
// (a tenant has no business with a cell's node names).
func Copy(src *corev1.Event, namespace, name string, regarding corev1.ObjectReference, labels map[string]string, reporter, instance string) *corev1.Event {
	first, last, count := Times(src)
	regarding.Namespace = namespace
	return &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		InvolvedObject:      regarding,
		Reason:              src.Reason,
		Message:             Truncate(src.Message),
		Type:                src.Type,
		Source:              corev1.EventSource{Component: component(src)},
		FirstTimestamp:      first,
		LastTimestamp:       last,
		Count:               count,
		ReportingController: reporter,
		ReportingInstance:   instance,
	}
}

// component is who reported src in its own plane (kubelet,
// default-scheduler, ...).
func component(src *corev1.Event) string {
	if src.Source.Component != "" {
		return src.Source.Component
	}
	return src.ReportingController
}

// Truncate cuts a message to MaxMessage bytes.
func Truncate(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	return msg[:MaxMessage-3] + "..."
}

// Same reports whether a copy already says what desired says.
func Same(have, desired *corev1.Event) bool {
	return have.Count == desired.Count && have.LastTimestamp.Equal(&desired.LastTimestamp) &&
		have.Message == desired.Message && have.Reason == desired.Reason && have.Type == desired.Type &&
		have.InvolvedObject == desired.InvolvedObject
}

// Upsert creates desired or, when a copy of its name exists (read from r,
// uncached: compute caches no copies), updates it when it says something
// else. written says whether a write was made.
func Upsert(ctx context.Context, w client.Writer, r client.Reader, desired *corev1.Event) (written bool, err error) {
	err = w.Create(ctx, desired.DeepCopy())
	if err == nil {
		return true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("failed to create event %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	have := &corev1.Event{}
	if err := r.Get(ctx, client.ObjectKeyFromObject(desired), have); err != nil {
		return false, fmt.Errorf("failed to read event %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	if Same(have, desired) {
		return false, nil
	}
	updated := desired.DeepCopy()
	updated.ResourceVersion = have.ResourceVersion
	// An event's first sighting and reporter never change.
	updated.FirstTimestamp, updated.Source = have.FirstTimestamp, have.Source
	updated.ReportingController, updated.ReportingInstance = have.ReportingController, have.ReportingInstance
	if err := w.Update(ctx, updated); err != nil {
		return false, fmt.Errorf("failed to update event %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	return true, nil
}

// Delay takes one write from lim at now: zero when it may go at once,
// otherwise how long to wait (nothing is taken then).
func Delay(lim *rate.Limiter, now time.Time) time.Duration {
	if lim == nil {
		return 0
	}
	res := lim.ReserveN(now, 1)
	if !res.OK() {
		return time.Second
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d
	}
	return 0
}

// Results of a carried copy, the values of the result label of the
// carriers' counters.
const (
	ResultWritten   = "written"
	ResultUnchanged = "unchanged"
	ResultLimited   = "limited"
	ResultFailed    = "failed"
)

// Carrier writes copies into a plane within a write rate and counts what
// became of each.
type Carrier struct {
	// Limiter bounds the writes; nil does not.
	Limiter *rate.Limiter
	// Results counts each copy by result (its one label).
	Results *prometheus.CounterVec
	// Now reads the time; time.Now when nil.
	Now func() time.Time
}

// Write upserts ev through w and r unless the write rate is spent: wait
// says then how long to wait, and nothing is written.
func (c *Carrier) Write(ctx context.Context, w client.Writer, r client.Reader, ev *corev1.Event) (wait time.Duration, err error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	if wait := Delay(c.Limiter, now()); wait > 0 {
		c.Results.WithLabelValues(ResultLimited).Inc()
		return wait, nil
	}
	written, err := Upsert(ctx, w, r, ev)
	switch {
	case err != nil:
		c.Results.WithLabelValues(ResultFailed).Inc()
		return 0, err
	case written:
		c.Results.WithLabelValues(ResultWritten).Inc()
	default:
		c.Results.WithLabelValues(ResultUnchanged).Inc()
	}
	return 0, nil
}
