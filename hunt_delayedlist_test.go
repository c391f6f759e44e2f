package equeue_test

import (
	"bytes"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// While a due message's move is written but not yet synced (so not yet
// visible to pulls), Engine.Delayed must still list it: a message the
// engine acknowledged is either pending or in its queue, never neither.
// It used to vanish from both in that window, as the index key the
// listing reads is deleted by the very write that makes it visible.
func TestHunt_DelayedListsAMoveNotYetVisible(t *testing.T) {
	r := newFaultRig(t, "memory", nil) // SyncAlways
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	inSync, held := make(chan struct{}), make(chan struct{})
	release := func() {
		select {
		case <-held:
		default:
			close(held)
		}
	}
	t.Cleanup(release)
	var armed, once atomic.Bool
	r.FS.OnWrite(func(b *store.Batch) error {
		if isDelayMove(b) && once.CompareAndSwap(false, true) {
			armed.Store(true)
		}
		return nil
	})
	r.FS.OnSync(func() error {
		if armed.CompareAndSwap(true, false) {
			close(inSync)
			<-held
		}
		return nil
	})
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("d"), Delay: 50 * time.Millisecond}}})
	require.NoError(t, err)
	<-inSync // the move is written, its fsync held
	pending, visible := pendingDelayed(t, r.E), len(queueBodies(t, r.E, "t", 0))
	release()
	assert.Equal(t, 1, pending+visible, "pending %d, visible %d: the message is in one place", pending, visible)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, r.E, "t", 0)) == 1 }, "visible once its fsync returned")
	assert.Equal(t, 0, pendingDelayed(t, r.E))
}

// A listing that counted a delayed message's index key before the
// scheduler registered its move must not count the move as well: the
// message is pending once, not twice.
func TestHunt_DelayedCountsAMoveRegisteredDuringItsScanOnce(t *testing.T) {
	fs := faultstore.New(store.NewMemory())
	s := &pausedDelayScan{Store: fs, paused: make(chan struct{}), resume: make(chan struct{})}
	e, err := equeue.Open("", &equeue.Options{Store: s})
	require.NoError(t, err)
	moving, held := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	fs.OnWrite(func(b *store.Batch) error {
		if isDelayMove(b) && once.CompareAndSwap(false, true) {
			close(moving)
			<-held
		}
		return nil
	})
	release := sync.OnceFunc(func() { close(held) })
	t.Cleanup(func() {
		release()
		require.NoError(t, e.Close())
	})
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("d"), Delay: 300 * time.Millisecond}}})
	require.NoError(t, err)

	s.armed.Store(true)
	listed := make(chan equeue.DelayedInfo, 1)
	go func() {
		d, err := e.Delayed(ctxBG, 0)
		assert.NoError(t, err)
		listed <- d
	}()
	waitClosed(t, s.paused, "the listing counted the key before it came due")
	waitClosed(t, moving, "the scheduler registered the move and its write is held")
	close(s.resume)
	d := <-listed
	assert.Equal(t, 1, d.Pending, "the message is pending once")
	assert.Len(t, d.Next, 1)

	release()
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) == 1 }, "visible once its write returned")
	assert.Equal(t, 0, pendingDelayed(t, e))
}

// waitClosed waits for ch to be closed, failing the test if it is not
// within waitLong.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLong):
		t.Fatalf("timed out waiting: %s", what)
	}
}

// pausedDelayScan is a store whose metadata scan, once armed, pauses
// after handing over a delay index key not yet due that the caller kept
// scanning past (the scheduler stops at such a key, a listing counts it),
// until resume is closed; paused is closed when it does.
type pausedDelayScan struct {
	equeue.Store
	armed          atomic.Bool
	paused, resume chan struct{}
}

func (s *pausedDelayScan) ScanMetaDamaged(prefix []byte, fn func(key, value []byte, damaged error) error) error {
	hold := func(k []byte, err error) error {
		if err == nil && bytes.HasPrefix(k, []byte("d/")) && len(k) == 18 &&
			int64(binary.BigEndian.Uint64(k[2:10])) > time.Now().UnixNano() && s.armed.CompareAndSwap(true, false) {
			close(s.paused)
			<-s.resume
		}
		return err
	}
	if ds, ok := s.Store.(store.DamagedMetaScanner); ok {
		return ds.ScanMetaDamaged(prefix, func(k, v []byte, d error) error { return hold(k, fn(k, v, d)) })
	}
	return s.Store.ScanMeta(prefix, func(k, v []byte) error { return hold(k, fn(k, v, nil)) })
}

// A delayed send whose fsync failed is of unknown outcome, and Delayed
// does not list it (as pulls do not show it) until a reopen: also when the
// scheduler, which reads the index from the store, moved it before the
// failure was known and that move's outcome is unknown too.
func TestHunt_DelayedDoesNotListTheMoveOfASendOfUnknownOutcome(t *testing.T) {
	r := newFaultRig(t, "memory", nil) // SyncAlways
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	at := time.Now().Add(500 * time.Millisecond)
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("known"), DeliverAt: at}}})
	require.NoError(t, err)

	var armed atomic.Bool
	var moveDeletes atomic.Int32
	bothMoved := make(chan struct{})
	r.FS.OnWrite(func(b *store.Batch) error {
		for _, op := range b.Meta {
			if op.Delete && bytes.HasPrefix(op.Key, []byte("d/")) && moveDeletes.Add(1) == 2 {
				close(bothMoved)
			}
		}
		return nil
	})
	r.FS.OnSync(func() error {
		if !armed.CompareAndSwap(true, false) {
			return nil
		}
		// The second send is written; hold its fsync until the scheduler
		// has written the moves of both messages, then fail it.
		select {
		case <-bothMoved:
		case <-time.After(waitLong):
		}
		return faultstore.ErrInjected
	})
	armed.Store(true)
	_, err = r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("unknown"), DeliverAt: at}}})
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	waitClosed(t, bothMoved, "the scheduler wrote both moves before the failed fsync was known")
	eventually(t, waitLong, func() bool { return r.E.StoreFailure() != nil }, "the fsync failed")

	d, err := r.E.Delayed(ctxBG, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, d.Pending, "the send known stored is listed (its move's outcome is unknown); the send of unknown outcome is not")
}

// A listing that skipped a due message's index key while its move was in
// flight must list it when that move is refused (its key back in the
// index, behind the scan) and moved again before the listing ends, however
// often that happens during the listing. It used to read the index again
// after each refusal, three times at most, and then list neither the key
// (skipped) nor the new move (taken for one whose key it had counted):
// the message was neither pending nor in its queue.
func TestHunt_DelayedListsAMoveRefusedAndStartedAgainDuringEveryScan(t *testing.T) {
	fs := faultstore.New(store.NewMemory())
	s := &endedDelayScan{Store: fs}
	e, err := equeue.Open("", &equeue.Options{Store: s})
	require.NoError(t, err)
	var refuse atomic.Bool
	refuse.Store(true)
	held := make(chan chan struct{}, 1) // each held move write, to let go
	fs.OnWrite(func(b *store.Batch) error {
		if !isDelayMove(b) || !refuse.Load() {
			return nil
		}
		let := make(chan struct{})
		s.moveHeld.Store(true)
		held <- let
		<-let
		s.moveHeld.Store(false)
		if refuse.Load() {
			return faultstore.ErrInjected
		}
		return nil
	})
	t.Cleanup(func() {
		refuse.Store(false)
		for {
			select {
			case g := <-held:
				close(g)
				continue
			default:
			}
			break
		}
		require.NoError(t, e.Close())
	})
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("d"), Delay: 20 * time.Millisecond}}})
	require.NoError(t, err)

	var first chan struct{}
	select {
	case first = <-held:
	case <-time.After(waitLong):
		t.Fatal("timed out waiting for the move")
	}
	pendingGo := first
	// Each scan of the listing skips the key of the move held in flight;
	// as it ends, the move is refused and the scheduler starts it again.
	const scans = 4
	var ended atomic.Int32
	s.onEnd = func() {
		if ended.Add(1) > scans {
			return
		}
		close(pendingGo)
		select {
		case pendingGo = <-held:
		case <-time.After(waitLong):
			t.Error("timed out waiting for the move to start again")
		}
	}
	s.armed.Store(true)
	d, err := e.Delayed(ctxBG, 0)
	s.armed.Store(false)
	require.NoError(t, err)
	visible := len(queueBodies(t, e, "t", 0))
	assert.Equal(t, 1, d.Pending+visible, "pending %d, visible %d: the message is in one place", d.Pending, visible)
	assert.Len(t, d.Next, d.Pending)

	refuse.Store(false)
	close(pendingGo)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) == 1 }, "moved once its write is no longer refused")
	assert.Equal(t, 0, pendingDelayed(t, e))
}

// endedDelayScan is a store whose scans of the delay index, once armed,
// call onEnd when they end while a move's write is held (moveHeld): only a
// listing scans then, the scheduler waiting for its move.
type endedDelayScan struct {
	equeue.Store
	armed, moveHeld atomic.Bool
	onEnd           func()
}

func (s *endedDelayScan) ScanMetaDamaged(prefix []byte, fn func(key, value []byte, damaged error) error) error {
	var err error
	if ds, ok := s.Store.(store.DamagedMetaScanner); ok {
		err = ds.ScanMetaDamaged(prefix, fn)
	} else {
		err = s.Store.ScanMeta(prefix, func(k, v []byte) error { return fn(k, v, nil) })
	}
	if bytes.Equal(prefix, []byte("d/")) && s.armed.Load() && s.moveHeld.Load() {
		s.onEnd()
	}
	return err
}
