package console_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
	"github.com/equeue-go/equeue/remote"
	"github.com/equeue-go/equeue/store"
)

// TestConsole_RateLimitedRedriveAllPassesALostMarksDeadLetter: the large
// dead letter was redriven, and then its redriven mark was garbled (lost):
// the engine takes it as redriven, and All passes it by; only a redrive
// naming its offset sends it back. The console's redrive of all at a rate
// sends the dead letters one at a time, and cannot tell whether one too
// large for its client was redriven: it must not name it, or the dead
// letter goes back a second time. Before, it named each one by its offset.
func TestConsole_RateLimitedRedriveAllPassesALostMarksDeadLetter(t *testing.T) {
	e, copies := seedRedrivenBigDeadLetterWithLostMark(t)

	s := serve(t, dialRemote(t, e, &remote.ClientOptions{MaxMessageBytes: answerLimit}), console.Options{})
	tok := csrf(t, s.get(t, prefix+"groups/sink"))
	pg := s.post(t, prefix+"groups/sink/dlq/redrive", url.Values{"csrf": {tok}, "all": {"1"}, "rate": {"1000"}, "to_topic": {"1"}, "confirm": {"1"}})
	require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
	assert.Equal(t, prefix+"groups/sink/dlq?done=redrive%3A2", pg.header.Get("Location"), "the two small ones are sent")
	assert.Equal(t, int64(6), copies(), "the large one did not go back a second time")
}

// TestConsole_TickedTooLargeRowPassesALostMarksDeadLetter: the page cannot
// show whether a dead letter too large for its client was redriven (its
// row's state is "unknown"), so it offers the row's checkbox; ticked, a
// redriven one with a sound mark is passed by (0 sent). One whose mark was
// lost must be passed by too: the person ticked a row of unknown state,
// not one listed redriven (those have no checkbox). Before, the console
// named the ticked rows by their offsets, which sends a lost mark's dead
// letter back, a second time, with or without a rate.
func TestConsole_TickedTooLargeRowPassesALostMarksDeadLetter(t *testing.T) {
	e, copies := seedRedrivenBigDeadLetterWithLostMark(t)
	s := serve(t, dialRemote(t, e, &remote.ClientOptions{MaxMessageBytes: answerLimit}), console.Options{})

	pg := s.get(t, prefix+"groups/sink/dlq")
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	assert.Contains(t, pg.body, `id="too-large-1"`, "the large one has a row")
	assert.Contains(t, pg.body, `name="offset" value="1"`, "its checkbox is offered, as for a sound mark")
	tok := csrf(t, pg)
	for _, rate := range []string{"0", "1000"} {
		pg = s.post(t, prefix+"groups/sink/dlq/redrive", url.Values{"csrf": {tok}, "offset": {"1"}, "rate": {rate}, "to_topic": {"1"}, "confirm": {"1"}})
		require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
		assert.Equal(t, prefix+"groups/sink/dlq?done=redrive%3A0", pg.header.Get("Location"), "rate %s: nothing is sent", rate)
		assert.Equal(t, int64(4), copies(), "rate %s: the large one did not go back a second time", rate)
	}

	// Ticked with the dead letters around it, those are sent.
	pg = s.post(t, prefix+"groups/sink/dlq/redrive", url.Values{"csrf": {tok}, "offset": {"2", "0", "1"}, "to_topic": {"1"}, "confirm": {"1"}})
	require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
	assert.Equal(t, prefix+"groups/sink/dlq?done=redrive%3A2", pg.header.Get("Location"), "the two small ones are sent")
	assert.Equal(t, int64(6), copies())
}

// seedRedrivenBigDeadLetterWithLostMark is seedBigDeadLetterOn an engine
// whose large dead letter (offset 1) was redriven to its topic and whose
// redriven mark was then garbled (lost). copies returns the end of topic
// "big": 4, its three messages and the large one's copy.
func seedRedrivenBigDeadLetterWithLostMark(t *testing.T) (e *equeue.Engine, copies func() int64) {
	t.Helper()
	ctx := ctxT(t)
	mem := store.NewMemory()
	e, err := equeue.Open("", &equeue.Options{Store: mem})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	d := seedBigDeadLetterOn(t, e)
	n, err := e.Redrive(ctx, "sink", equeue.RedriveRequest{Offsets: []int64{d.bigOff}, ToTopic: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	var marks [][]byte
	require.NoError(t, mem.ScanMeta([]byte("dlqr/sink\x00"), func(k, _ []byte) error {
		marks = append(marks, append([]byte(nil), k...))
		return nil
	}))
	require.Len(t, marks, 1, "the large dead letter's redriven mark")
	require.NoError(t, mem.Write(&store.Batch{Meta: []store.MetaOp{{Key: marks[0], Value: []byte{0}}}}), "garble it")
	dls, err := e.ListDeadLetters(ctx, "sink", equeue.ListDeadLettersRequest{Max: 10})
	require.NoError(t, err)
	require.Len(t, dls, 3)
	require.Equal(t, []bool{false, true, false}, []bool{dls[0].Redriven, dls[1].Redriven, dls[2].Redriven}, "the lost mark's dead letter is listed redriven")
	copies = func() int64 {
		t.Helper()
		info, err := e.Topic(ctx, "big")
		require.NoError(t, err)
		return info.Queues[0].MaxOffset
	}
	require.Equal(t, int64(4), copies(), "three messages and the large one's redriven copy")
	return e, copies
}
