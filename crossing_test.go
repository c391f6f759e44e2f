package equeue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// grantsOf returns a's grants of topic.
func grantsOf(a equeue.Assignment, topic string) []equeue.Grant {
	var out []equeue.Grant
	for _, q := range a.Queues {
		if q.Topic == topic {
			out = append(out, q)
		}
	}
	return out
}

// TestRetry_LatestGroupStartsARecreatedRetryTopicAtItsFirstCopy: a group
// that consumes from the latest message, whose retry topic an operator
// deleted. Its next send-back creates the retry topic again and stores
// the copy before the member is granted the new queue; the member must
// start there at the copy, not after it, or the failed message is lost.
func TestRetry_LatestGroupStartsARecreatedRetryTopicAtItsFirstCopy(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	retryTopic := equeue.RetryTopic("g")
	subs := []equeue.Subscription{{Topic: "t"}, {Topic: retryTopic}}
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: subs, From: equeue.ConsumeFromLatest})
	require.NoError(t, err)
	_, err = e.FetchOffsets(ctx, "g", "m", a.Queues)
	require.NoError(t, err)
	require.NoError(t, e.DeleteTopic(ctx, retryTopic))
	a, err = e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m", KnownVersion: a.Version})
	require.NoError(t, err)
	require.Empty(t, grantsOf(a, retryTopic))
	grant := grantsOf(a, "t")[0]

	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("job")}}})
	require.NoError(t, err)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 1, Group: "g", Member: "m", Epoch: grant.Epoch})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: grant, Offset: res.Messages[0].Offset, Attempts: 1})
	require.NoError(t, err)

	a, err = e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m", KnownVersion: a.Version})
	require.NoError(t, err)
	retry := grantsOf(a, retryTopic)
	require.Len(t, retry, 1)
	offs, err := e.FetchOffsets(ctx, "g", "m", retry)
	require.NoError(t, err)
	assert.Equal(t, int64(0), offs[0].Offset, "the copy at offset 0 must be delivered")
	res, err = e.Pull(ctx, &equeue.PullRequest{Topic: retryTopic, Offset: offs[0].Offset, Max: 1, Group: "g", Member: "m", Epoch: retry[0].Epoch})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, "job", string(res.Messages[0].Body))
}

// TestRetry_FailedMessageDeletedMeanwhileIsFinished: a handler fails a
// message that a topic limit (drop-oldest) deleted while it ran, so the
// engine has nothing left to copy to the retry topic or the dead letters.
// The consumer must finish the message (the committed offset passes it)
// instead of running the handler again without end, past MaxAttempts.
func TestRetry_FailedMessageDeletedMeanwhileIsFinished(t *testing.T) {
	for _, orderly := range []bool{false, true} {
		t.Run(map[bool]string{false: "concurrent", true: "orderly"}[orderly], func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{MaxMessages: 1}}))
			release := make(chan struct{})
			var runs atomic.Int64
			c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				Orderly: orderly, MaxAttempts: 2,
				SendBackRetryDelay: 10 * time.Millisecond, LocalRetryDelay: 10 * time.Millisecond,
				Handler: func(ctx context.Context, m *equeue.Message) error {
					if string(m.Body) != "first" {
						return nil
					}
					if runs.Add(1) == 1 {
						<-release
					}
					return errors.New("fail")
				}})
			p := newProducer(t, e, nil)
			_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("first")})
			require.NoError(t, err)
			eventually(t, 10*time.Second, func() bool { return runs.Load() == 1 }, "first handler running")
			// The next send makes the limit delete the running message.
			_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("second")})
			require.NoError(t, err)
			waitMinOffset(t, e, "t", 1)
			close(release)
			waitWindow(t, c, "t", 2)
			assert.LessOrEqual(t, runs.Load(), int64(2), "handler runs past MaxAttempts")
			d, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
			require.NoError(t, err)
			assert.Empty(t, d, "nothing was left to dead-letter")
		})
	}
}

// waitMinOffset waits until queue 0 of topic starts at off.
func waitMinOffset(t *testing.T, e *equeue.Engine, topic string, off int64) {
	t.Helper()
	eventually(t, 10*time.Second, func() bool {
		ti, err := e.Topic(context.Background(), topic)
		require.NoError(t, err)
		return ti.Queues[0].MinOffset == off
	}, "%s/0 trimmed to %d", topic, off)
}

// TestPriority_PullConsumerGateReadsPastSkippedMessages: a PullConsumer
// with a tag filter fetches the low lane while the high lane holds, past
// its position, more messages the filter rejects than one pull scans, and
// then one that matches. The high lane still has a message for
// the consumer, so the low lane must look empty until it was fetched.
func TestPriority_PullConsumerGateReadsPastSkippedMessages(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
	p := newProducer(t, e, nil)
	send := func(prio int, tag string) {
		t.Helper()
		_, err := p.Send(ctx, &equeue.Message{Topic: "p", Priority: prio, Tag: tag, Body: []byte(tag)})
		require.NoError(t, err)
	}
	for range 40 { // a pull of one message scans 8
		send(1, "B")
	}
	send(1, "A")
	send(0, "A")

	pc, err := equeue.NewPullConsumer(e, equeue.PullConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p", Filter: "A"}}})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	t.Cleanup(func() { _ = pc.Close() })
	high, low := equeue.QueueRef{Topic: "p", Queue: 1}, equeue.QueueRef{Topic: "p", Queue: 0}

	msgs, err := pc.Fetch(ctx, low, 1, 0)
	require.NoError(t, err)
	assert.Empty(t, msgs, "the low lane goes before a matching message of the high lane")
	msgs, err = pc.Fetch(ctx, high, 1, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	assert.Equal(t, 1, msgs[0].Priority)
	msgs, err = pc.Fetch(ctx, low, 1, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	assert.Equal(t, 0, msgs[0].Priority)
}

// TestAddQueues_LatestGroupGetsWhatIsSentToANewQueue: a group consuming
// from the latest message owns a queue added to its topic from the moment
// it is added, so a message sent to the queue before the member fetched
// its start there must be delivered, not skipped.
func TestAddQueues_LatestGroupGetsWhatIsSentToANewQueue(t *testing.T) {
	for _, model := range []equeue.MessageModel{equeue.Clustering, equeue.Broadcasting} {
		t.Run(model.String(), func(t *testing.T) {
			ctx := ctxT(t)
			e, reopen := openEngine(t, "badger", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			join := &equeue.JoinRequest{Group: "g", Member: "m", Model: model, Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromLatest}
			a, err := e.JoinGroup(ctx, join)
			require.NoError(t, err)
			_, err = e.FetchOffsets(ctx, "g", "m", a.Queues)
			require.NoError(t, err)
			require.NoError(t, e.AddQueues(ctx, "t", 1))
			_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: []*equeue.Message{{Body: []byte("job")}}})
			require.NoError(t, err)
			require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "m"}))
			e = reopen() // the start is stored, not only held in memory
			a, err = e.JoinGroup(ctx, join)
			require.NoError(t, err)
			gs := grantsOf(a, "t")
			require.Len(t, gs, 2)
			offs, err := e.FetchOffsets(ctx, "g", "m", gs)
			require.NoError(t, err)
			assert.Equal(t, int64(0), offs[1].Offset, "the message sent to the new queue is delivered")
		})
	}
}
