package equeue

import (
	"sync"
	"time"
)

// consumerTimers runs a consumer's periodic work (commit, stuck-handler
// watchdog) on time.AfterFunc timers: no goroutine waits between ticks, and
// a tick's work never overlaps the previous one's (the timer is re-armed
// when the work returns). stop waits for work in progress.
type consumerTimers struct {
	mu      sync.Mutex
	stopped bool
	timers  []*time.Timer
	running sync.WaitGroup // ticks in progress; Add only under mu while !stopped
}

// every runs work every d until stop.
func (t *consumerTimers) every(d time.Duration, work func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	var tm *time.Timer
	tm = time.AfterFunc(d, func() {
		t.mu.Lock()
		if t.stopped {
			t.mu.Unlock()
			return
		}
		t.running.Add(1)
		t.mu.Unlock()
		defer t.running.Done()
		work()
		t.mu.Lock()
		if !t.stopped {
			tm.Reset(d)
		}
		t.mu.Unlock()
	})
	t.timers = append(t.timers, tm)
}

// stop stops every timer and waits for work in progress; idempotent.
func (t *consumerTimers) stop() {
	t.mu.Lock()
	t.stopped = true
	for _, tm := range t.timers {
		tm.Stop()
	}
	t.timers = nil
	t.mu.Unlock()
	t.running.Wait()
}
