package equeue

import (
	"errors"
	"time"
)

// A nearly full disk refuses every write (ErrNoSpace) until space is
// freed, and a busy program retries its sends all along: one log line per
// refused write would flood the host's log. The writer logs the first
// refusal and then at most one line per noSpaceLogEvery, counting those
// in between.
const noSpaceLogEvery = 10 * time.Second

// logWriteFailed logs a store write that failed with err; messages is the
// records it held.
func (e *Engine) logWriteFailed(messages int, err error) {
	if !errors.Is(err, ErrNoSpace) {
		e.log.Error("write failed", "messages", messages, "err", err)
		return
	}
	e.stats.noSpace.Add(1)
	refused := e.noSpaceRefused.Add(1)
	now := time.Now().UnixNano()
	last := e.noSpaceLogged.Load()
	if last != 0 && now-last < int64(noSpaceLogEvery) || !e.noSpaceLogged.CompareAndSwap(last, now) {
		return
	}
	e.noSpaceRefused.Add(-refused)
	e.log.Error("write refused: the disk is nearly full; sends fail with ErrNoSpace until space is freed",
		"messages", messages, "refused", refused, "err", err)
}
