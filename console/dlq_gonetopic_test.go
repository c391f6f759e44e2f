package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

// TestConsole_RedriveSelectedGoesPastAGoneTopicsDeadLetter ticks two
// dead letters that are not consecutive, the first of a topic deleted
// since: as Redrive does for the dead letters it selects, the console
// leaves that one and sends the other back, then says that a topic is
// gone. Before, it stopped at the first range the broker refused, and the
// dead letters of the ranges after it were not sent.
func TestConsole_RedriveSelectedGoesPastAGoneTopicsDeadLetter(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	for _, tp := range []string{"gone", "kept"} {
		require.NoError(t, e.CreateTopic(ctx, tp, 1))
	}
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "w",
		Subscriptions: []equeue.Subscription{{Topic: "gone"}, {Topic: "kept"}},
		Handler: func(context.Context, *equeue.Message) error {
			return equeue.DeadLetter(errors.New("no"))
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	// Dead letters 0 of "gone", then 1 and 2 of "kept", in that order.
	for i, tp := range []string{"gone", "kept", "kept"} {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: tp, Messages: []*equeue.Message{{Body: []byte(tp)}}})
		require.NoError(t, err)
		eventually(t, 20*time.Second, func() bool {
			dl, err := e.ListDeadLetters(ctx, "w", equeue.ListDeadLettersRequest{Max: 10})
			return err == nil && len(dl) == i+1
		}, "dead letter stored")
	}
	require.NoError(t, c.Close())
	require.NoError(t, e.DeleteTopic(ctx, "gone"))
	kept, err := e.Topic(ctx, "kept")
	require.NoError(t, err)

	s := serve(t, e, console.Options{})
	tok := csrf(t, s.get(t, prefix+"groups/w/dlq"))
	pg := s.post(t, prefix+"groups/w/dlq/redrive", url.Values{"csrf": {tok}, "offset": {"0", "2"}, "to_topic": {"1"}, "confirm": {"1"}})
	assert.Equal(t, http.StatusNotFound, pg.status, "a topic is gone")
	assert.Contains(t, pg.body, "1 sent before the failure")

	dl, err := e.ListDeadLetters(ctx, "w", equeue.ListDeadLettersRequest{Max: 10})
	require.NoError(t, err)
	require.Len(t, dl, 3)
	assert.Equal(t, []bool{false, false, true}, []bool{dl[0].Redriven, dl[1].Redriven, dl[2].Redriven},
		"the gone topic's dead letter is left, the other ticked one is sent back")
	assert.Equal(t, int64(1), added(t, e, kept))
}
