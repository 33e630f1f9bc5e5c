package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxMessageLength bounds condition messages compute writes, so a long
// provider message cannot bloat every status level it is copied to.
const MaxMessageLength = 1024

// Truncate shortens a message to MaxMessageLength, marking the cut.
func Truncate(msg string) string {
	if len(msg) <= MaxMessageLength {
		return msg
	}
	const ellipsis = "..."
	cut := MaxMessageLength - len(ellipsis)
	// Do not split a UTF-8 sequence.
	for cut > 0 && msg[cut]&0xC0 == 0x80 {
		cut--
	}
	return msg[:cut] + ellipsis
}

// SameCondition reports whether two conditions say the same thing: type,
// status, reason, message and observedGeneration. LastTransitionTime is
// derived from these, so it is not compared.
func SameCondition(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason &&
		a.Message == b.Message && a.ObservedGeneration == b.ObservedGeneration
}

// SetCondition puts c into conditions. LastTransitionTime is kept from the
// existing condition of the same type when the status does not change, and
// set to now when it does (or when there was none), so rewriting an
// unchanged condition changes nothing. It reports whether conditions
// changed.
func SetCondition(conditions *[]metav1.Condition, c metav1.Condition, now metav1.Time) bool {
	c.LastTransitionTime = now
	if old := meta.FindStatusCondition(*conditions, c.Type); old != nil {
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		if SameCondition(*old, c) && old.LastTransitionTime.Equal(&c.LastTransitionTime) {
			return false
		}
		*old = c
		return true
	}
	*conditions = append(*conditions, c)
	return true
}
