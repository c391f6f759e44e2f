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
	// Once 8 is pulled again and passed over, the commits go on listing it
	// until the committed offset passes it: a second restart must not
	// handle it again.
	off3, atts3 := q.committableState()
	require.Equal(t, int64(6), off3)
	require.Equal(t, []MessageAttempts{{Offset: 6, Attempts: 1}, {Offset: 8, Done: true}}, atts3, "8 stays listed done after its pull")
	r := newProcessQueue(OffsetCommit{Offset: off3, Attempts: atts3})
	require.Equal(t, []int64{6, 7, 9}, offsetsOf(r.add(msgs(6, 7, 8, 9), 10)), "a second restart passes 8 over too")
	for _, o := range []int64{6, 7, 9} {
		require.True(t, r.begin(o))
	}
	require.False(t, r.begin(8), "8 is no message to handle")
	r.end(6, true)
	r.end(7, true)
	off4, atts4 := r.committableState()
	require.Equal(t, int64(9), off4, "the window passes the done entry once what is below it is done")
	require.Empty(t, atts4)
	r.end(9, true)
	off5, _ := r.committableState()
	require.Equal(t, int64(10), off5)

	// A done entry at the front is passed at once.
	f := newProcessQueue(OffsetCommit{Offset: 3, Attempts: []MessageAttempts{{Offset: 3, Attempts: 1}, {Offset: 4, Done: true}}})
	f.restored[3] = restoredDone // as if 3 had been finished and listed
	require.Empty(t, f.add(msgs(3, 4), 5))
	off6, atts6 := f.committableState()
	require.Equal(t, int64(5), off6)
	require.Empty(t, atts6)
}

func offsetsOf(msgs []*Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Offset
	}
	return out
}

// TestProcessQueue_ALocalRetryAndADrainsGapRunAMessageOnce: a message that
// failed and waits for its local retry is a gap to a drain, which hands it
// out at once; the retry, when its delay is over, then has nothing to run.
// Before, both ran it: one failure cost two attempts (past MaxAttempts, a
// second dead letter), and a message that failed once was handled twice.
// A retry announced earlier cannot take a later one's turn either.
func TestProcessQueue_ALocalRetryAndADrainsGapRunAMessageOnce(t *testing.T) {
	p := newProcessQueue(OffsetCommit{Offset: 0})
	p.add([]*Message{{Offset: 0}, {Offset: 1}}, 2)
	require.True(t, p.begin(0))
	require.True(t, p.begin(1))
	p.end(1, true)
	first := p.awaitRetry(0, 1) // 0 failed: retried after a delay
	p.end(0, false)

	p.stopAfterGaps() // a drain: 0 is below what finished
	gaps, _ := p.gaps()
	require.Len(t, gaps, 1)
	require.Equal(t, int64(0), gaps[0].Offset)
	require.False(t, p.takeRetry(0, first), "the drain took the message: the retry has nothing to run")

	// The gap's run fails again and announces a later retry: the first
	// retry's goroutine, waking now, does not take the later one's turn.
	require.True(t, p.begin(0))
	second := p.awaitRetry(0, 2)
	p.end(0, false)
	require.False(t, p.takeRetry(0, first))
	require.True(t, p.takeRetry(0, second))
	require.False(t, p.takeRetry(0, second), "taken once")
	_, atts := p.committableState()
	require.Equal(t, []MessageAttempts{{Offset: 0, Attempts: 2}, {Offset: 1, Done: true}}, atts)
}
