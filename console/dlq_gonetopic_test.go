package console_test

import (
	"context"
	"errors"
	"fmt"
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
	e, kept := goneTopicsDeadLetters(t)

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

// TestConsole_RedriveAtARateGoesPastAGoneTopicsDeadLetter redrives at a
// rate, one dead letter at a time, the ticked ones (two that are not
// consecutive) or all, the first of a topic deleted since: as without a
// rate (TestConsole_RedriveSelectedGoesPastAGoneTopicsDeadLetter), the
// console leaves that one, sends the others back, then says that a topic
// is gone, with the count sent. Before, it stopped at that first dead
// letter and sent none of the others.
func TestConsole_RedriveAtARateGoesPastAGoneTopicsDeadLetter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		form     url.Values
		sent     int64
		redriven []bool
	}{
		{"selected", url.Values{"offset": {"0", "2"}}, 1, []bool{false, false, true}},
		{"all", url.Values{"all": {"1"}}, 2, []bool{false, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			e, kept := goneTopicsDeadLetters(t)

			s := serve(t, e, console.Options{})
			form := url.Values{"csrf": {csrf(t, s.get(t, prefix+"groups/w/dlq"))}, "rate": {"1000"}, "to_topic": {"1"}, "confirm": {"1"}}
			for k, v := range tc.form {
				form[k] = v
			}
			pg := s.post(t, prefix+"groups/w/dlq/redrive", form)
			assert.Equal(t, http.StatusNotFound, pg.status, "a topic is gone")
			assert.Contains(t, pg.body, fmt.Sprintf("%d sent before the failure", tc.sent))

			dl, err := e.ListDeadLetters(ctx, "w", equeue.ListDeadLettersRequest{Max: 10})
			require.NoError(t, err)
			require.Len(t, dl, 3)
			assert.Equal(t, tc.redriven, []bool{dl[0].Redriven, dl[1].Redriven, dl[2].Redriven},
				"the gone topic's dead letter is left, the others are sent back")
			assert.Equal(t, tc.sent, added(t, e, kept))
		})
	}
}

// goneTopicsDeadLetters returns an engine whose group "w" has three dead
// letters: 0 of topic "gone", deleted since, then 1 and 2 of topic "kept",
// whose description as it was then it returns too.
func goneTopicsDeadLetters(t *testing.T) (*equeue.Engine, equeue.TopicInfo) {
	t.Helper()
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
	return e, kept
}
