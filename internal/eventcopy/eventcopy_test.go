package eventcopy

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTimesReadsBothEventAPIs(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	for _, tc := range []struct {
		name      string
		ev        corev1.Event
		first     metav1.Time
		last      metav1.Time
		wantCount int32
	}{
		{"legacy", corev1.Event{FirstTimestamp: t0, LastTimestamp: t1, Count: 3}, t0, t1, 3},
		{"events.k8s.io, once", corev1.Event{EventTime: metav1.NewMicroTime(t0.Time)}, t0, t0, 1},
		{"events.k8s.io, a series", corev1.Event{EventTime: metav1.NewMicroTime(t0.Time),
			Series: &corev1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(t1.Time)}}, t0, t1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, last, count := Times(&tc.ev)
			if !first.Equal(&tc.first) || !last.Equal(&tc.last) || count != tc.wantCount {
				t.Errorf("Times = %v, %v, %d; want %v, %v, %d", first, last, count, tc.first, tc.last, tc.wantCount)
			}
		})
	}
}

func TestACopyIsALegacyEventWithoutTheNode(t *testing.T) {
	src := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "cell-ns", Name: "web-0.abc"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-0"},
		Reason:         "BackOff", Message: strings.Repeat("x", 2000), Type: corev1.EventTypeWarning,
		Source:    corev1.EventSource{Component: "kubelet", Host: "node-dfw"},
		EventTime: metav1.NewMicroTime(time.Now()),
	}
	c := Copy(src, "project-ns", "web-0.abc", corev1.ObjectReference{Kind: "Instance", Name: "web-0", UID: "u"}, map[string]string{"k": "v"}, "r", "DFW")
	switch {
	case c.Namespace != "project-ns" || c.InvolvedObject.Namespace != "project-ns":
		t.Errorf("the copy and what it regards must be in the receiving namespace: %s, %s", c.Namespace, c.InvolvedObject.Namespace)
	case c.Source.Host != "" || c.Source.Component != "kubelet":
		t.Errorf("source = %+v, want the component without the host", c.Source)
	case !c.EventTime.IsZero() || c.Count != 1 || c.FirstTimestamp.IsZero():
		t.Errorf("not a legacy event: eventTime %v, count %d, first %v", c.EventTime, c.Count, c.FirstTimestamp)
	case len(c.Message) != MaxMessage || !strings.HasSuffix(c.Message, "..."):
		t.Errorf("message of %d bytes, want cut to %d", len(c.Message), MaxMessage)
	}
	again := c.DeepCopy()
	if !Same(again, c) {
		t.Error("a copy is not the same as itself")
	}
	again.Count++
	if Same(again, c) {
		t.Error("a copy counted again is the same")
	}
}

func TestDelayTakesNothingWhenItMustWait(t *testing.T) {
	now := time.Now()
	lim := rate.NewLimiter(1, 1)
	if d := Delay(lim, now); d != 0 {
		t.Fatalf("the first write waits %v", d)
	}
	d := Delay(lim, now)
	if d <= 0 {
		t.Fatal("the second write at once does not wait")
	}
	if d2 := Delay(lim, now); d2 != d {
		t.Errorf("a refused write took a token: wait %v then %v", d, d2)
	}
	if Delay(nil, now) != 0 {
		t.Error("no limiter waits")
	}
}
