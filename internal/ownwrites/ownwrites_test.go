package ownwrites

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestTracker(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "web-0"}
	// A step writes (wrote != "") or checks a version.
	type step struct {
		wrote     string
		uid       types.UID
		check     string
		wantStale bool
		forget    bool
	}
	tests := map[string][]step{
		"an unknown object is never stale": {
			{uid: "a", check: "1"},
		},
		"versions older than the latest write are stale": {
			{wrote: "20", uid: "a"},
			{uid: "a", check: "9", wantStale: true},
			{uid: "a", check: "19", wantStale: true},
		},
		"the write itself is not stale, and then the object is forgotten": {
			{wrote: "20", uid: "a"},
			{uid: "a", check: "20"},
			{uid: "a", check: "19"},
		},
		"a later version, by anyone, is not stale": {
			{wrote: "20", uid: "a"},
			{uid: "a", check: "35"},
		},
		"an older write does not lower the mark": {
			{wrote: "20", uid: "a"},
			{wrote: "15", uid: "a"},
			{uid: "a", check: "17", wantStale: true},
		},
		"a successor with the same name is not stale": {
			{wrote: "20", uid: "a"},
			{uid: "b", check: "5"},
			{uid: "a", check: "5"},
		},
		"a version that does not compare is not stale": {
			{wrote: "20", uid: "a"},
			{uid: "a", check: "x7"},
		},
		"a forgotten object is not stale": {
			{wrote: "20", uid: "a"},
			{uid: "a", check: "5", forget: true},
		},
	}
	for name, steps := range tests {
		t.Run(name, func(t *testing.T) {
			var tr Tracker
			for i, s := range steps {
				if s.forget {
					tr.Forget(key)
				}
				if s.wrote != "" {
					tr.Wrote(key, s.uid, s.wrote)
					continue
				}
				if got := tr.Stale(key, s.uid, s.check); got != s.wantStale {
					t.Fatalf("step %d: Stale(%s, %s) = %t, want %t", i, s.uid, s.check, got, s.wantStale)
				}
			}
		})
	}
}

func TestUnseen(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "web-0"}
	var tr Tracker
	if left := tr.Unseen(key, time.Minute); left != 0 {
		t.Errorf("an object never written: Unseen = %s, want 0", left)
	}
	tr.Wrote(key, "a", "20")
	if left := tr.Unseen(key, time.Minute); left <= 0 || left > time.Minute {
		t.Errorf("just created: Unseen = %s, want in (0, 1m]", left)
	}
	if tr.Stale(key, "a", "20") || tr.Unseen(key, time.Minute) != 0 {
		t.Error("once the cache shows the write, the object is forgotten")
	}
	tr.Wrote(key, "a", "30")
	time.Sleep(2 * time.Millisecond)
	if left := tr.Unseen(key, time.Millisecond); left != 0 {
		t.Errorf("past the ttl: Unseen = %s, want 0 (a create the cache never saw must not be waited for forever)", left)
	}
	if tr.Stale(key, "a", "25") {
		t.Error("past the ttl the write is forgotten")
	}
}
