package equeue_test

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// A dead letter whose redriven mark is lost (unreadable or garbled) is
// taken as redriven, so that no Redrive sends it back twice on its own;
// but then nothing could send it back at all, not even a Redrive naming
// its offset (found by review). Naming it in RedriveRequest.Offsets is now
// the way out: it is sent back, and a sound mark replaces the lost one,
// while All and ranges still pass it by.
func TestRedrive_ExplicitOffsetRedrivesALostMarksDeadLetter(t *testing.T) {
	for _, how := range markDamage {
		t.Run(how, func(t *testing.T) {
			ctx := ctxT(t)
			mem := store.NewMemory()
			e, st := openWithHealingLostRedrivenMark(t, mem, how)
			copies := func() int64 {
				t.Helper()
				info, err := e.Topic(ctx, "t")
				require.NoError(t, err)
				return info.Queues[0].MaxOffset
			}
			redriven := func() []bool {
				t.Helper()
				dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				require.NoError(t, err)
				var out []bool
				for _, d := range dl {
					out = append(out, d.Redriven)
				}
				return out
			}
			require.Equal(t, int64(4), copies(), "three messages and the first one's redriven copy")
			assert.Equal(t, []bool{true, false, false}, redriven(), "listed as redriven")

			n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{From: 0, To: 1, ToTopic: true})
			require.NoError(t, err)
			assert.Zero(t, n, "a range passes it by")
			n, err = e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
			require.NoError(t, err)
			assert.Equal(t, 2, n, "All passes it by")
			require.Equal(t, int64(6), copies())

			n, err = e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{0, 1}, ToTopic: true})
			require.NoError(t, err)
			assert.Equal(t, 1, n, "named, the lost mark's dead letter is sent back; the soundly marked one is not")
			assert.Equal(t, int64(7), copies())
			assert.Equal(t, []bool{true, true, true}, redriven())

			v, err := st.GetMeta(lostMarkKey(t, mem))
			require.NoError(t, err, "the mark reads back")
			assert.Len(t, v, 5, "a sound mark of the dead-letter topic replaced the lost one")
			n, err = e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{0}, ToTopic: true})
			require.NoError(t, err)
			assert.Zero(t, n, "the sound mark keeps it from going back twice")
			assert.Equal(t, int64(7), copies())
			assert.Equal(t, uint64(1), e.Stats().CorruptRecords, "the lost mark was counted once")
		})
	}
}

// openWithHealingLostRedrivenMark is openWithLostRedrivenMark whose
// unreadable mark reads back again once a write stores it anew, as a
// store's damaged value does once written over; it also returns the
// store the engine runs on.
func openWithHealingLostRedrivenMark(t *testing.T, mem *store.Memory, how string) (*equeue.Engine, equeue.Store) {
	t.Helper()
	st := healingLostRedrivenMark(t, mem, how)
	e, err := equeue.Open("", &equeue.Options{Store: st, Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e, st
}

// healingLostRedrivenMark stores redrivenFixture in mem, damages its mark
// as how says, and returns the store to open: an unreadable mark reads
// back again once a write stores it anew.
func healingLostRedrivenMark(t *testing.T, mem *store.Memory, how string) equeue.Store {
	t.Helper()
	redrivenFixture(t, mem)
	var st equeue.Store = damageMark(t, mem, how, "dlqr/g\x00", 0)
	if how == "unreadable" {
		key := lostMarkKey(t, mem)
		var healed atomic.Bool
		st = &healingMeta{damagedMeta: &damagedMeta{Store: keepOpen{mem}, damaged: func(k []byte) error {
			if !healed.Load() && bytes.Equal(k, key) {
				return fmt.Errorf("%w: value of %q unreadable", store.ErrDamaged, k)
			}
			return nil
		}}, key: key, healed: &healed}
	}
	return st
}

// lostMarkKey returns the key of group g's redriven mark of dead letter 0
// in mem.
func lostMarkKey(t *testing.T, mem *store.Memory) []byte {
	t.Helper()
	var key []byte
	require.NoError(t, mem.ScanMeta([]byte("dlqr/g\x00"), func(k, _ []byte) error {
		if isMarkAt(k, "dlqr/g\x00", 0) {
			key = bytes.Clone(k)
		}
		return nil
	}))
	require.NotNil(t, key, "the mark of dead letter 0 is stored")
	return key
}

// healingMeta is a damagedMeta whose damage at key ends (healed) once a
// write stores a value there.
type healingMeta struct {
	*damagedMeta
	key    []byte
	healed *atomic.Bool
}

func (s *healingMeta) Write(b *store.Batch) error {
	err := s.damagedMeta.Write(b)
	for _, op := range b.Meta {
		if err == nil && !op.Delete && bytes.Equal(op.Key, s.key) {
			s.healed.Store(true)
		}
	}
	return err
}
