package remote_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A retry copy whose origin topic was deleted (and perhaps made again
// under its name) before it was due reaches no consumer over the wire
// either: the server's engine skips it in the pull of the group's retry
// topic and counts it as a retry of a deleted topic, not as an expired
// message (the client's EngineStats reads the count too), and the group's
// own messages and retries go on.
func TestRemote_RetryCopyOfADeletedTopicIsNotDelivered(t *testing.T) {
	for _, again := range []bool{false, true} {
		name := map[bool]string{false: "deleted", true: "made again"}[again]
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			e, c := setup(t, nil)
			require.NoError(t, c.CreateTopic(ctx, "t", 1))
			require.NoError(t, c.CreateTopic(ctx, "other", 1))

			// A member pulls "old" and sends it back, due at once; it
			// leaves before anything consumes the copy.
			_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("old")}}})
			require.NoError(t, err)
			a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "early",
				Subscriptions: []equeue.Subscription{{Topic: "t"}, {Topic: equeue.RetryTopic("g")}}})
			require.NoError(t, err)
			var g equeue.Grant
			for _, q := range a.Queues {
				if q.Topic == "t" {
					g = q
				}
			}
			require.Equal(t, "t", g.Topic)
			res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Group: "g", Member: "early", Epoch: g.Epoch})
			require.NoError(t, err)
			require.Len(t, res.Messages, 1)
			_, err = c.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "early", Grant: g, Offset: 0, Attempts: 1, Cause: "failed"})
			require.NoError(t, err)
			require.NoError(t, c.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "early"}))

			require.NoError(t, c.DeleteTopic(ctx, "t"))
			topic := "other"
			if again {
				require.NoError(t, c.CreateTopic(ctx, "t", 1))
				topic = "t"
			}

			type seen struct {
				body, topic string
				attempt     int
			}
			var mu sync.Mutex
			var got []seen
			startConsumer(t, c, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: topic}},
				RetryTopicDelays: []time.Duration{time.Millisecond},
				Handler: func(_ context.Context, m *equeue.Message) error {
					mu.Lock()
					got = append(got, seen{string(m.Body), m.Topic, m.Attempt})
					mu.Unlock()
					if m.Attempt == 0 {
						return errors.New("first attempt fails")
					}
					return nil
				}})
			_, err = newProducer(t, c).Send(ctx, &equeue.Message{Topic: topic, Body: []byte("own")})
			require.NoError(t, err)
			// Its retry is stored after the old copy: once it is
			// delivered, the pull has passed the old copy.
			eventually(t, 10*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(got) > 0 && got[len(got)-1] == seen{"own", topic, 1}
			}, "the group's own retry delivered")
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, []seen{{"own", topic, 0}, {"own", topic, 1}}, got, "the old copy is not delivered")
			assert.Equal(t, uint64(1), e.Stats().DeletedTopicRetries, "the server's engine counts the skipped copy")
			st, err := c.EngineStats(ctx)
			require.NoError(t, err)
			assert.Equal(t, uint64(1), st.DeletedTopicRetries, "the skipped copy is counted as a retry of a deleted topic")
			assert.Zero(t, st.ExpiredMessages, "the skipped copy is not counted as an expired message")
		})
	}
}
