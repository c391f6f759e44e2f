package equeue_test

import (
	"bytes"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// TestListDeadLetters_BesideAnExplicitRedriveCountsALostMarkOnce lists the
// dead letters while a Redrive naming the lost mark's dead letter sends it
// back: the listing reads the lost mark before the redrive writes a sound
// one over it, and notes the loss after. The loss is counted once in
// Stats().CorruptRecords; the mark lost again later is counted anew. Before, the redrive's write forgot that the loss
// was counted, and the listing's late note counted it a second time.
func TestListDeadLetters_BesideAnExplicitRedriveCountsALostMarkOnce(t *testing.T) {
	for _, how := range markDamage {
		t.Run(how, func(t *testing.T) {
			ctx := ctxT(t)
			mem := store.NewMemory()
			st := &heldMarkRead{Store: healingLostRedrivenMark(t, mem, how), key: lostMarkKey(t, mem),
				read: make(chan struct{}), release: make(chan struct{})}
			e, err := equeue.Open("", &equeue.Options{Store: st, Retention: equeue.RetentionPolicy{Interval: -1}})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })

			st.armed.Store(true)
			type listing struct {
				dls []equeue.DLQEntry
				err error
			}
			listed := make(chan listing, 1)
			go func() {
				dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				listed <- listing{dls, err}
			}()
			<-st.read // the listing read the lost mark
			n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{0}, ToTopic: true})
			require.NoError(t, err)
			require.Equal(t, 1, n, "named, the lost mark's dead letter is sent back")
			close(st.release)
			l := <-listed
			require.NoError(t, l.err)
			require.Len(t, l.dls, 3)
			assert.True(t, l.dls[0].Redriven, "listed as redriven: by the lost mark, or the sound one")

			assert.Equal(t, uint64(1), e.Stats().CorruptRecords, "the lost mark was counted once")
			dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
			require.NoError(t, err)
			assert.Equal(t, []bool{true, false, false}, []bool{dls[0].Redriven, dls[1].Redriven, dls[2].Redriven})
			assert.Equal(t, uint64(1), e.Stats().CorruptRecords, "the sound mark is not counted")

			// Lost once more, after the redrive: counted anew.
			require.NoError(t, mem.Write(&store.Batch{Meta: []store.MetaOp{{Key: st.key, Value: []byte{0}}}}), "garble it")
			dls, err = e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
			require.NoError(t, err)
			assert.True(t, dls[0].Redriven)
			assert.Equal(t, uint64(2), e.Stats().CorruptRecords, "the new loss is counted")
		})
	}
}

// heldMarkRead is a store whose first read of key once armed reads the
// value, closes read and then waits for release before it answers.
type heldMarkRead struct {
	equeue.Store
	key           []byte
	armed         atomic.Bool
	read, release chan struct{}
}

func (s *heldMarkRead) GetMeta(k []byte) ([]byte, error) {
	v, err := s.Store.GetMeta(k)
	if bytes.Equal(k, s.key) && s.armed.CompareAndSwap(true, false) {
		close(s.read)
		<-s.release
	}
	return v, err
}

func (s *heldMarkRead) ScanMetaDamaged(prefix []byte, fn func(key, value []byte, damaged error) error) error {
	if ds, ok := s.Store.(store.DamagedMetaScanner); ok {
		return ds.ScanMetaDamaged(prefix, fn)
	}
	return s.Store.ScanMeta(prefix, func(k, v []byte) error { return fn(k, v, nil) })
}
