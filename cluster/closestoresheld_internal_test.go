package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// heldWriter is an io.Writer whose first Write waits until released (a
// read of the store streamed somewhere that does not answer).
type heldWriter struct {
	enter    func()
	released <-chan struct{}
}

func (w heldWriter) Write(p []byte) (int, error) {
	w.enter()
	<-w.released
	return len(p), nil
}

// holdRead starts a read of the rig's node's store, streamed to a writer
// that holds until the rig releases it, as a read on a hung disk would,
// and waits until it holds; the channel has its result.
func (r *heldRig) holdRead() <-chan error {
	r.t.Helper()
	p := r.point()
	sn, err := r.n.st.Snapshot()
	require.NoError(r.t, err)
	read := make(chan error, 1)
	go func() {
		_, err := sn.WriteTo(heldWriter{enter: p.enter, released: p.released})
		sn.Release()
		read <- err
	}()
	r.reached(p, "the read did not reach its writer")
	return read
}

// TestNode_PlainCloseIsBoundedWhileAGivenUpEngineHoldsTheStore: on a hung
// disk the leader engine's store does not answer its write (held in its
// admission, as in TestNode_PlainCloseIsBoundedWhileTheEnginesStoreIsHeld)
// nor a read already in the node's store, which holds the store's read
// lock as an engine's pull on that disk would (here a snapshot stream
// whose writer does not return). Close gives the engine's close up after
// its bound, and Raft shuts down; the node's store cannot close while the
// read holds it, and the given-up engine may still be at work on it.
// A plain Close must not wait for that: it returns an error matching
// equeue.ErrCloseAbandoned with Raft's listener closed, and the stores
// close in the background once the store answers. Before, Close closed
// the stores itself after giving the engine up, and so waited for the
// store for ever.
func TestNode_PlainCloseIsBoundedWhileAGivenUpEngineHoldsTheStore(t *testing.T) {
	r := newHeldRig(t)
	r.open(&Options{admitHook: r.heldBatch(true)})
	read := r.holdRead()
	sent := r.appendHeld("the append did not reach the store's admission")

	r.closeIsBounded("a plain Close waits for the stores' close, held by a read of the given-up engine's store")
	r.release()
	require.NoError(t, <-read, "the read finishes once the store answers")
	r.endsOnceReleased(sent)
}
