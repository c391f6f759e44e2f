package equeue

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOffsetValue_DoneMarksRoundTrip: a committed state with attempts and
// done messages reads back as written, and a state of the first releases
// (the offset alone) still reads.
func TestOffsetValue_DoneMarksRoundTrip(t *testing.T) {
	atts := []MessageAttempts{{Offset: 10, Attempts: 2}, {Offset: 11, Done: true}, {Offset: 13, Attempts: 1 << 30}, {Offset: 14, Done: true}}
	off, got, ok := parseOffsetValue(offsetValue(10, atts))
	require.True(t, ok)
	require.Equal(t, int64(10), off)
	require.Equal(t, atts, got)

	off, got, ok = parseOffsetValue(offsetValue(7, nil))
	require.True(t, ok)
	require.Equal(t, int64(7), off)
	require.Empty(t, got)
}

// TestCheckAttempts_DoneMarks: a done mark sits above the committed offset
// (the message there is the first unfinished one) and carries no
// attempts; attempts stay positive and below the done bit.
func TestCheckAttempts_DoneMarks(t *testing.T) {
	oc := func(atts ...MessageAttempts) OffsetCommit { return OffsetCommit{Offset: 10, Attempts: atts} }
	require.NoError(t, checkAttempts(oc(MessageAttempts{Offset: 10, Attempts: 1}, MessageAttempts{Offset: 11, Done: true})))
	require.NoError(t, checkAttempts(oc(MessageAttempts{Offset: 12, Done: true})))
	for name, bad := range map[string]OffsetCommit{
		"done at the offset":    oc(MessageAttempts{Offset: 10, Done: true}),
		"done below the offset": oc(MessageAttempts{Offset: 9, Done: true}),
		"no attempts":           oc(MessageAttempts{Offset: 11}),
		"negative attempts":     oc(MessageAttempts{Offset: 11, Attempts: -1, Done: true}),
		"attempts on the bit":   oc(MessageAttempts{Offset: 11, Attempts: attemptsDoneBit}),
		"out of order":          oc(MessageAttempts{Offset: 12, Done: true}, MessageAttempts{Offset: 11, Attempts: 1}),
	} {
		require.ErrorIs(t, checkAttempts(bad), ErrInvalidArgument, name)
	}
}

// TestProcessQueue_DoneAboveAnUnfinishedMessageIsCommittedAndSkipped: the
// committed state lists the messages done above the first unfinished one,
// and a process queue started from it passes over them.
func TestProcessQueue_DoneAboveAnUnfinishedMessageIsCommittedAndSkipped(t *testing.T) {
	msgs := func(offs ...int64) []*Message {
		out := make([]*Message, len(offs))
		for i, o := range offs {
			out[i] = &Message{Offset: o}
		}
		return out
	}
	p := newProcessQueue(OffsetCommit{Offset: 5})
	require.Len(t, p.add(msgs(5, 6, 7, 8), 9), 4)
	for _, o := range []int64{5, 6, 7, 8} {
		require.True(t, p.begin(o))
	}
	p.failed(6, 1)
	p.end(6, false)
	p.end(5, true)
	p.end(8, true)
	off, atts := p.committableState()
	require.Equal(t, int64(6), off)
	require.Equal(t, []MessageAttempts{{Offset: 6, Attempts: 1}, {Offset: 8, Done: true}}, atts, "7 still runs; 8 is done")

	q := newProcessQueue(OffsetCommit{Offset: off, Attempts: atts})
	off2, atts2 := q.committableState()
	require.Equal(t, off, off2)
	require.Equal(t, atts, atts2, "a restart that pulled nothing yet commits the same state")
	kept := q.add(msgs(6, 7, 8, 9), 10)
	require.Equal(t, []int64{6, 7, 9}, offsetsOf(kept), "8 is passed over")
	require.Equal(t, 1, kept[0].Attempt, "6 goes on from its attempts")
}

func offsetsOf(msgs []*Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Offset
	}
	return out
}
