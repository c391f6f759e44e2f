package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
	"github.com/equeue-go/equeue/remote"
)

// answerLimit is the remote client's MaxMessageBytes in these tests: the
// large dead letter does not fit it, the others do.
const answerLimit = 64 << 10

// bigDeadLetters are three dead letters of group "sink", the middle one
// larger than answerLimit.
type bigDeadLetters struct {
	e        *equeue.Engine
	smallIDs []string
	bigID    string
	bigOff   int64 // the large one's offset in the dead-letter topic: 1
}

func seedBigDeadLetter(t *testing.T) bigDeadLetters {
	t.Helper()
	return seedBigDeadLetterOn(t, openEngine(t))
}

// seedBigDeadLetterOn is seedBigDeadLetter on e.
func seedBigDeadLetterOn(t *testing.T, e *equeue.Engine) bigDeadLetters {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "big", 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()
	var d bigDeadLetters
	d.e = e
	for i, body := range []string{"small one", strings.Repeat("x", 2*answerLimit), "small two"} {
		r, err := p.Send(ctx, &equeue.Message{Topic: "big", Body: []byte(body)})
		require.NoError(t, err)
		if i == 1 {
			d.bigID = r.ID
		} else {
			d.smallIDs = append(d.smallIDs, r.ID)
		}
	}
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group: "sink", Subscriptions: []equeue.Subscription{{Topic: "big"}}, CommitInterval: 10 * time.Millisecond,
		Orderly: true, // dead-lettered in order: the large one in the middle
		Handler: func(context.Context, *equeue.Message) error { return equeue.DeadLetter(errors.New("refused")) },
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	var dls []equeue.DLQEntry
	eventually(t, 20*time.Second, func() bool {
		dls, err = e.ListDeadLetters(ctx, "sink", equeue.ListDeadLettersRequest{Max: 10})
		return err == nil && len(dls) == 3
	}, "the three messages were dead-lettered")
	require.NoError(t, c.Close())
	d.bigOff = -1
	for _, dl := range dls {
		if dl.Message.ID == d.bigID {
			d.bigOff = dl.Offset
		}
	}
	require.Equal(t, int64(1), d.bigOff, "the large message is the middle dead letter")
	return d
}

// TestConsole_DeadLetterTooLargeForTheClient lists the dead letters through
// a remote client that cannot receive one of them: the page lists the
// others and shows that one by its offset, which can still be redriven.
func TestConsole_DeadLetterTooLargeForTheClient(t *testing.T) {
	d := seedBigDeadLetter(t)
	s := serve(t, dialRemote(t, d.e, &remote.ClientOptions{MaxMessageBytes: answerLimit}), console.Options{})

	pg := s.get(t, prefix+"groups/sink/dlq")
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	for _, id := range d.smallIDs {
		assert.Contains(t, pg.body, id, "the dead letters that fit are listed")
	}
	assert.Contains(t, pg.body, fmt.Sprintf(`id="too-large-%d"`, d.bigOff), "the large one has a row")
	assert.Contains(t, pg.body, "too large to show")
	assert.Contains(t, pg.body, fmt.Sprintf(`name="offset" value="%d"`, d.bigOff), "the large one can be selected for a redrive")

	// A page that starts at the large one.
	pg = s.get(t, prefix+fmt.Sprintf("groups/sink/dlq?from=%d&count=1", d.bigOff))
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	assert.Contains(t, pg.body, fmt.Sprintf(`id="too-large-%d"`, d.bigOff))
	assert.Contains(t, pg.body, fmt.Sprintf("?from=%d&count=1", d.bigOff+1), "the next page starts past it")

	// Redriving it by its offset works: the broker reads it, not the client
	// (to its topic: an orderly group does not consume a retry topic).
	tok := csrf(t, pg)
	pg = s.post(t, prefix+"groups/sink/dlq/redrive", url.Values{"csrf": {tok}, "offset": {fmt.Sprint(d.bigOff)}, "to_topic": {"1"}, "confirm": {"1"}})
	require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
	dls, err := d.e.ListDeadLetters(ctxT(t), "sink", equeue.ListDeadLettersRequest{From: d.bigOff, Max: 1})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	assert.True(t, dls[0].Redriven)
}

// TestConsole_RateLimitedRedriveAllPassesATooLargeDeadLetter redrives every
// dead letter at a rate (one at a time, listed by the console) through a
// client that cannot receive one of them: all three are sent.
func TestConsole_RateLimitedRedriveAllPassesATooLargeDeadLetter(t *testing.T) {
	d := seedBigDeadLetter(t)
	s := serve(t, dialRemote(t, d.e, &remote.ClientOptions{MaxMessageBytes: answerLimit}), console.Options{})

	// The dead-letter page may fail here: take the token from the group
	// page's reset form. The redrive goes to the topic (see above).
	tok := csrf(t, s.get(t, prefix+"groups/sink"))
	pg := s.post(t, prefix+"groups/sink/dlq/redrive", url.Values{"csrf": {tok}, "all": {"1"}, "rate": {"1000"}, "to_topic": {"1"}, "confirm": {"1"}})
	require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
	assert.Equal(t, prefix+"groups/sink/dlq?done=redrive%3A3", pg.header.Get("Location"))
	dls, err := d.e.ListDeadLetters(ctxT(t), "sink", equeue.ListDeadLettersRequest{Max: 10})
	require.NoError(t, err)
	for _, dl := range dls {
		assert.True(t, dl.Redriven, "dead letter %d", dl.Offset)
	}
}
