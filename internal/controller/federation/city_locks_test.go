package federation

import (
	"sync"
	"testing"
	"time"
)

func TestCityLocks(t *testing.T) {
	var l CityLocks
	unlock := l.Lock("ns-1", "DFW")

	t.Run("another city is not held up", func(t *testing.T) {
		done := make(chan struct{})
		go func() { l.Lock("ns-1", "LHR")(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
			t.Fatal("LHR waited for DFW")
		}
	})

	t.Run("the same city waits until it is released", func(t *testing.T) {
		var wg sync.WaitGroup
		acquired := make(chan struct{})
		wg.Go(func() { l.Lock("ns-1", "DFW")(); close(acquired) })
		select {
		case <-acquired:
			t.Fatal("DFW was taken twice")
		case <-time.After(50 * time.Millisecond):
		}
		unlock()
		wg.Wait()
	})

	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.locks) != 0 {
		t.Errorf("released locks are kept: %v", l.locks)
	}
}
