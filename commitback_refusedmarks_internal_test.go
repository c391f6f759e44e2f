package equeue

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// A commit that moves an offset back and whose write is refused moves
// nothing and deletes none of the send-back marks that answer while the
// offset stays (at or above the committed offset), as a refused reset
// (TestResetOffsets_RefusedWriteKeepsTheLiveMarks): the marks its write
// has no room for, deleted before it, are the dead ones. Before, they
// went in offset order, the highest, live ones first, so a refused
// commit had deleted them and a failure of their messages, delivered
// again, was sent back a second time.
func TestCommitMovingBack_RefusedWriteKeepsTheLiveMarks(t *testing.T) {
	const marks, committed, back = markDeletesPerWrite + 8, 10, 5
	ref := QueueRef{Topic: "t", Queue: 0}
	for _, tc := range []struct {
		name   string
		commit func(ctx context.Context, e *Engine, off int64) error
		join   bool
	}{
		{name: "CommitGroupOffsets", commit: func(ctx context.Context, e *Engine, off int64) error {
			return e.CommitGroupOffsets(ctx, "g", map[QueueRef]int64{ref: off})
		}},
		{name: "CommitOffsets", join: true, commit: func(ctx context.Context, e *Engine, off int64) error {
			hb, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "m"})
			if err != nil {
				return err
			}
			require.Len(t, hb.Queues, 1)
			return e.CommitOffsets(ctx, &CommitRequest{Group: "g", Member: "m", Offsets: []OffsetCommit{{Grant: hb.Queues[0], Offset: off}}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st := &refusingOffsetWrites{Store: store.NewMemory(), prefix: append(append(slices.Clone(keyOffsetPrefix), "g"...), 0)}
			e, err := Open("", &Options{Store: st, Retention: RetentionPolicy{Interval: -1}})
			require.NoError(t, err)
			defer func() { require.NoError(t, e.Close()) }()

			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			batch := make([]*Message, marks)
			for i := range batch {
				batch[i] = &Message{Body: []byte("x")}
			}
			_, err = e.Append(ctx, &AppendRequest{Topic: "t", Messages: batch})
			require.NoError(t, err)
			if tc.join {
				_, err := e.JoinGroup(ctx, &JoinRequest{Group: "g", Member: "m", Subscriptions: []Subscription{{Topic: "t"}}})
				require.NoError(t, err)
			}
			require.NoError(t, tc.commit(ctx, e, committed))
			g, err := e.groups.group("g")
			require.NoError(t, err)

			// Marks 0..marks-1: those below the committed offset are dead,
			// the rest live.
			k := seedSentBackMarks(t, g, st.Store, ref, marks)

			st.armed.Store(true)
			err = tc.commit(ctx, e, back)
			require.ErrorIs(t, err, errRefusedWrite)
			st.armed.Store(false)

			gi, err := e.Group(ctx, "g")
			require.NoError(t, err)
			require.Len(t, gi.Queues, 1)
			assert.EqualValues(t, committed, gi.Queues[0].Committed, "the refused commit moved nothing")
			var gone []int64
			for o := int64(committed); o < marks; o++ {
				_, err := st.GetMeta(sentBackKey("g", k, o))
				g.sbMu.Lock()
				_, held := g.sentBack[k][o]
				g.sbMu.Unlock()
				if err != nil || !held {
					gone = append(gone, o)
				}
			}
			assert.Empty(t, gone, "no live mark was deleted by the refused commit")

			require.NoError(t, tc.commit(ctx, e, back))
			for o := range int64(marks) {
				_, err := st.GetMeta(sentBackKey("g", k, o))
				require.ErrorIs(t, err, store.ErrNotFound, "the commit moving back deleted mark %d", o)
			}
			g.sbMu.Lock()
			assert.Empty(t, g.sentBack[k])
			g.sbMu.Unlock()
		})
	}
}
