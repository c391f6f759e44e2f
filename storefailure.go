package equeue

import (
	"errors"
	"fmt"
	"time"

	"github.com/equeue-go/equeue/store"
)

// A failed fsync stops every later write.
//
// When an fsync fails, the operating system may already have marked the
// pages it could not write as clean (Linux does; PostgreSQL's "fsyncgate"
// is the well-known case). A later fsync then succeeds without writing
// them again. Two things follow:
//
//   - a batch written while the failed fsync ran may have been swept into
//     it, so its own later fsync proves nothing;
//   - the store's log on disk may end at the lost pages: after a crash,
//     recovery stops there and takes every later write with it, even writes
//     a successful fsync acknowledged.
//
// So continuing would let the engine tell a sender "stored" and lose the
// message in a crash. After a failed fsync the engine therefore writes
// nothing more: every batch not yet completed gets ErrIndeterminate and is
// never shown to readers, and every later write is refused with
// ErrStoreFailed (nothing stored). Reads go on over what was published.
// Closing and opening the engine again replays the store from disk (Badger
// rewrites what its log holds into fresh, synced tables) and lifts the
// stop. A Sync that failed before any fsync (store.ErrSyncIncomplete) is
// tried again first (syncStore): only when the retries fail too does it
// stop the writes.

// failStore stops every later write because an fsync failed with err. The
// first failure is kept.
func (e *Engine) failStore(err error) {
	if e.storeFailed.CompareAndSwap(nil, &err) {
		e.log.Error("fsync failed: the engine stores nothing more until it is reopened", "err", err)
	}
}

// syncStore makes every earlier write durable, one fsync at a time, and
// stops writes when it fails. A failed fsync may have swept the pages of
// writes made while it ran (see above), so a Sync beside it that returned
// nil would vouch for them wrongly: the fsync that starts after a failed
// one finds the stop already set, and the writes it covers are answered
// as of unknown outcome (Engine.complete).
//
// A Sync that stopped before any fsync failed (store.ErrSyncIncomplete: it
// could not list or open a file to flush, out of file descriptors say)
// lost no page: a later Sync that succeeds covers every write before it.
// syncStore tries such a Sync again, up to incompleteSyncRetries times
// with a growing pause (syncRetryPause), and stops writes only when the
// last try fails too. Once the engine is closing, the retries make no
// pause: they delay the close by their Syncs only.
func (e *Engine) syncStore() error {
	e.syncMu.Lock()
	defer e.syncMu.Unlock()
	err := e.syncRetrying(e.retryPause)
	if err != nil {
		e.failStore(err)
	}
	return err
}

// finalSync is Close's Sync of the store, once nothing writes any more:
// an incomplete one is retried as syncStore does, with its pauses (the
// close is waiting for this Sync anyway), and only a Sync that failed
// after its retries is reported. It does not stop writes: there are none
// left, and Close reports the failure itself.
func (e *Engine) finalSync() error {
	e.syncMu.Lock()
	defer e.syncMu.Unlock()
	return e.syncRetrying(sleepFor)
}

// syncRetrying is the store's Sync, tried again after pause (syncRetryPause,
// doubled before each next try) up to incompleteSyncRetries times while
// it fails with store.ErrSyncIncomplete. Call it with syncMu held.
func (e *Engine) syncRetrying(pause func(time.Duration)) error {
	err := e.st.Sync()
	wait := syncRetryPause
	for try := 0; try < incompleteSyncRetries && errors.Is(err, store.ErrSyncIncomplete); try++ {
		e.log.Warn("sync incomplete: trying again", "err", err, "retry", try+1)
		pause(wait)
		wait *= 2
		err = e.st.Sync()
	}
	return err
}

// sleepFor waits d.
func sleepFor(d time.Duration) { time.Sleep(d) }

// incompleteSyncRetries bounds the retries of a Sync that failed with
// store.ErrSyncIncomplete; syncRetryPause is the pause before the first
// one, doubled before each next one (35ms in all).
const (
	incompleteSyncRetries = 3
	syncRetryPause        = 5 * time.Millisecond
)

// retryPause waits d, or less once the engine is closing.
func (e *Engine) retryPause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-e.closing:
	}
}

// StoreFailure returns the fsync error that stopped the engine's writes,
// or nil while it writes. Once it is set, every write fails with
// ErrStoreFailed until the engine is closed and opened again; a health
// check can report it.
func (e *Engine) StoreFailure() error {
	if p := e.storeFailed.Load(); p != nil {
		return *p
	}
	return nil
}

// storeFailedErr is the error of a write refused after the stop.
func (e *Engine) storeFailedErr() error {
	if p := e.storeFailed.Load(); p != nil {
		return fmt.Errorf("%w: %w", ErrStoreFailed, *p)
	}
	return nil
}

// repeatsFailure reports whether err, an fsync failure, repeats failed,
// the one that stopped the engine's writes: it wraps failed, or the cause
// failed wraps. A store that keeps its first fsync failure fails every
// later Sync with a new error wrapping that cause (the Badger store does),
// not with the error the engine recorded.
func repeatsFailure(err, failed error) bool {
	if err == nil || failed == nil {
		return false
	}
	cause := failed
	for next := errors.Unwrap(cause); next != nil; next = errors.Unwrap(cause) {
		cause = next
	}
	return errors.Is(err, failed) || errors.Is(err, cause)
}
