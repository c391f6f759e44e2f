package equeue

import (
	"errors"
	"fmt"
	"time"

	"github.com/equeue-go/equeue/store"
)

// A record of a format version this build cannot read was written by a
// newer engine: the directory was opened by an older one (a downgrade).
// Pulls stop before such a record instead of skipping it, so that no
// consumer commits past messages it never got; an engine that reads the
// version serves them again. Consumers retry such a pull until then, so
// the engine logs the first refusal and then at most one line per
// unsupportedLogEvery, counting those in between.
const unsupportedLogEvery = 10 * time.Second

// refuseUnsupported counts and logs a pull of q refused at off, where
// decoding found a record of an unknown format version (err, which matches
// ErrUnsupportedFormat), and returns the pull's error.
func (e *Engine) refuseUnsupported(q *queue, off int64, err error) error {
	err = fmt.Errorf("equeue: read %s/%d at %d: %w", q.topic.name, q.id, off, err)
	e.stats.unsupported.Add(1)
	refused := e.unsupportedRefused.Add(1)
	now := time.Now().UnixNano()
	last := e.unsupportedLogged.Load()
	if last != 0 && now-last < int64(unsupportedLogEvery) || !e.unsupportedLogged.CompareAndSwap(last, now) {
		return err
	}
	e.unsupportedRefused.Add(-refused)
	e.log.Error("pull refused: a record of a newer format version; consumers stop before it until an engine that reads it serves the queue",
		"topic", q.topic.name, "queue", q.id, "offset", off, "refused", refused, "err", err)
	return err
}

// unsupportedSegment returns err, a store's error, matching
// ErrUnsupportedFormat (and ErrCorrupt) too when the store refused a
// segment of a format version it cannot read (store.ErrUnsupportedFormat),
// so that callers see it as they see a record of a later version.
func unsupportedSegment(err error) error {
	if errors.Is(err, store.ErrUnsupportedFormat) && !errors.Is(err, ErrUnsupportedFormat) {
		return fmt.Errorf("%w: %w: %w", ErrCorrupt, ErrUnsupportedFormat, err)
	}
	return err
}
