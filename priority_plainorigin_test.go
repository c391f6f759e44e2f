package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestPriority_DeadLetterOfAPlainTopicKeepsTheLowestLane: a message of a
// topic without priorities was stored in its only lane, the lowest. Once
// the topic is deleted and made again with priority lanes, its dead letter
// still shows priority 0, a redrive with ToTopic sends it to lane 0, and
// one redriven to the retry topic is handled with priority 0. Its copy
// records no lane (a topic without priorities has none to record), and
// was taken for one made before copies recorded their lane, so it got the
// lane of its old queue ID among the new lanes: here 1 of 2, a priority
// the message was never sent with.
func TestPriority_DeadLetterOfAPlainTopicKeepsTheLowestLane(t *testing.T) {
	for _, toTopic := range []bool{false, true} {
		t.Run(fmt.Sprintf("toTopic=%v", toTopic), func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "p", 2))
			c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}},
				Handler: func(context.Context, *equeue.Message) error { return equeue.DeadLetter(errors.New("no")) }})
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "p", Queue: 1, Messages: []*equeue.Message{{Body: []byte("x")}}})
			require.NoError(t, err)
			eventually(t, waitLong, func() bool {
				dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				require.NoError(t, err)
				return len(dls) == 1
			}, "the message is dead-lettered")
			require.NoError(t, c.Close())

			require.NoError(t, e.DeleteTopic(ctx, "p"))
			require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 2, Priorities: 2}))
			dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
			require.NoError(t, err)
			require.Len(t, dls, 1)
			assert.Equal(t, 0, dls[0].Message.Priority, "the dead letter's priority")

			if toTopic {
				n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
				require.NoError(t, err)
				require.Equal(t, 1, n)
				got := landedIn(t, e, 4)
				require.Len(t, got, 1, "one queue ID holds the redriven message: %v", got)
				for q := range got {
					assert.Equal(t, 0, q%2, "lane of queue ID %d", q)
				}
				return
			}
			var mu sync.Mutex
			var seen []string
			startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}},
				Handler: func(_ context.Context, m *equeue.Message) error {
					mu.Lock()
					seen = append(seen, fmt.Sprintf("%s priority %d", m.Body, m.Priority))
					mu.Unlock()
					return nil
				}})
			n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
			require.NoError(t, err)
			require.Equal(t, 1, n)
			eventually(t, waitLong, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 1 }, "the retry is handled")
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, []string{"x priority 0"}, seen)
		})
	}
}

// TestPriority_OldDeadLetterTakesTheLaneOfItsQueue: a dead letter stored
// before copies recorded their lane or their origin topic's ID still takes
// the lane of its origin queue ID among the lanes its topic has now: in
// the listing (in-process and over remote alike), and when redriven to
// the retry topic, whose copy records that lane before it records the
// topic's ID (which would otherwise say the message came from a topic
// without priorities).
func TestPriority_OldDeadLetterTakesTheLaneOfItsQueue(t *testing.T) {
	for _, tr := range []string{"inproc", "remote"} {
		t.Run(tr, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			b := brokerOver(t, e, tr).(interface {
				ListDeadLetters(context.Context, string, equeue.ListDeadLettersRequest) ([]equeue.DLQEntry, error)
			})
			require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 3}))
			for q := range 3 {
				m := &equeue.Message{Body: fmt.Appendf(nil, "%d", q)}
				m.SetSysProperties(map[string]string{equeue.SysOriginTopic: "p", equeue.SysOriginQueue: fmt.Sprint(q), equeue.SysOriginOffset: "0"})
				_, err := equeue.AppendInternal(ctx, e, &equeue.AppendRequest{Topic: equeue.DLQTopic("g"), Messages: []*equeue.Message{m}})
				require.NoError(t, err)
			}
			dls, err := b.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
			require.NoError(t, err)
			lanes := map[string]int{}
			for _, dl := range dls {
				lanes[string(dl.Message.Body)] = dl.Message.Priority
			}
			assert.Equal(t, map[string]int{"0": 0, "1": 1, "2": 2}, lanes)
			if tr != "inproc" {
				return
			}

			var mu sync.Mutex
			seen := map[string]int{}
			startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}},
				Handler: func(_ context.Context, m *equeue.Message) error {
					mu.Lock()
					seen[string(m.Body)] = m.Priority
					mu.Unlock()
					return nil
				}})
			n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
			require.NoError(t, err)
			require.Equal(t, 3, n)
			eventually(t, waitLong, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 3 }, "the retries are handled")
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, lanes, seen, "handled with the lanes they were listed with")
		})
	}
}
