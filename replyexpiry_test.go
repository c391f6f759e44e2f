package equeue_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

func replyTopics(t *testing.T, e *equeue.Engine) []string {
	t.Helper()
	ts, err := e.Topics(context.Background())
	require.NoError(t, err)
	var out []string
	for _, ti := range ts {
		if strings.HasPrefix(ti.Name, equeue.ReplyTopicPrefix) {
			out = append(out, ti.Name)
		}
	}
	return out
}

// The reply topic of a requester that died without closing is deleted once
// nobody pulled it for ReplyTopicIdleTTL; a live requester's topic, whose
// listener always has a pull waiting, stays, and its requests go on.
func TestRequest_IdleReplyTopicOfADeadRequesterIsDeleted(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		const ttl = 300 * time.Millisecond
		e, b := openOver(t, tr, "memory", &equeue.Options{ReplyTopicIdleTTL: ttl})
		ctx := ctxT(t)
		require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
		replier(t, b, "rpc", nil)
		p := newProducer(t, b, nil)
		rep, err := p.Request(ctx, &equeue.Message{Topic: "rpc", Body: []byte("one")})
		require.NoError(t, err)
		assert.Equal(t, "re:one", string(rep.Body))
		live := replyTopics(t, e)
		require.Len(t, live, 1)

		// A requester that crashed: its topic exists, nobody reads it.
		dead := equeue.ReplyTopicPrefix + "crashed"
		_, err = b.Route(ctx, dead)
		require.NoError(t, err)
		eventually(t, 30*time.Second, func() bool {
			_, err := e.Topic(ctx, dead)
			return err != nil
		}, "the dead requester's topic deleted")
		_, err = e.Topic(ctx, dead)
		assert.ErrorIs(t, err, equeue.ErrTopicNotFound)

		// Several TTLs later the live requester still has the same topic.
		time.Sleep(3 * ttl)
		assert.Equal(t, live, replyTopics(t, e))
		rep, err = p.Request(ctx, &equeue.Message{Topic: "rpc", Body: []byte("two")})
		require.NoError(t, err)
		assert.Equal(t, "re:two", string(rep.Body))
		assert.Equal(t, live, replyTopics(t, e))
	})
}

// A failed store write while deleting an idle reply topic keeps the topic
// (memory follows the store), and a later check deletes it for good: it is
// gone after a reopen too.
func TestRequest_IdleReplyTopicDeleteFailsThenSucceeds(t *testing.T) {
	const ttl = 200 * time.Millisecond
	r := newFaultRig(t, "badger", &equeue.Options{ReplyTopicIdleTTL: ttl})
	ctx := ctxT(t)
	dead := equeue.ReplyTopicPrefix + "crashed"
	_, err := r.E.Route(ctx, dead)
	require.NoError(t, err)
	var refused atomic.Int64
	r.FS.OnWrite(func(*store.Batch) error { refused.Add(1); return faultstore.ErrInjected })
	eventually(t, 30*time.Second, func() bool { return refused.Load() >= 2 }, "expiry tried twice")
	_, err = r.E.Topic(ctx, dead)
	require.NoError(t, err, "a deletion the store refused leaves the topic")
	r.FS.OnWrite(nil)
	eventually(t, 30*time.Second, func() bool {
		_, err := r.E.Topic(ctx, dead)
		return err != nil
	}, "the topic deleted once the store takes writes again")
	r.reopen()
	_, err = r.E.Topic(ctx, dead)
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "the deletion was stored")
}

// A requester's pull that reaches its reply topic just after the expiry
// found the topic idle (the requester paused for the whole TTL, say over a
// broken connection, and came back) keeps the topic: the expiry deletes a
// topic only if no pull runs at the deletion itself, so the pull goes on
// waiting and gets the reply (before, the topic was deleted under the
// running pull, which failed with its requester's waiting requests).
func TestReplyExpiry_KeepsATopicAPullReachedAfterTheCheck(t *testing.T) {
	e, _ := openEngine(t, "memory", &equeue.Options{ReplyTopicIdleTTL: time.Hour})
	ctx := ctxT(t)
	name := equeue.ReplyTopicPrefix + "paused"
	_, err := e.Route(ctx, name)
	require.NoError(t, err)

	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pulled := make(chan equeue.PullResult, 1)
	pullErr := make(chan error, 1)
	equeue.OnReplyExpiry(e, func(n string) {
		if n != name {
			return
		}
		go func() {
			res, err := e.Pull(pctx, &equeue.PullRequest{Topic: name, Max: 1, Wait: time.Minute})
			pulled <- res
			pullErr <- err
		}()
		eventually(t, 30*time.Second, func() bool { return equeue.ReplyPullsRunning(e, name) == 1 }, "the requester's pull runs")
	})
	equeue.ExpireReplyTopics(e, time.Now().Add(2*time.Hour))
	equeue.OnReplyExpiry(e, nil)

	_, err = e.Topic(ctx, name)
	require.NoError(t, err, "a topic a pull was waiting on was deleted")
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: name, Messages: []*equeue.Message{{Body: []byte("the reply")}}})
	require.NoError(t, err)
	res := <-pulled
	require.NoError(t, <-pullErr)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, "the reply", string(res.Messages[0].Body))
}

// The expiry deletes the very topic it found idle: a reply topic of the
// same name made since (a requester that saw its topic deleted by an admin
// and routed it again) is another, fresh topic, and stays.
func TestReplyExpiry_LeavesANewTopicOfTheSameName(t *testing.T) {
	e, _ := openEngine(t, "memory", &equeue.Options{ReplyTopicIdleTTL: time.Hour})
	ctx := ctxT(t)
	name := equeue.ReplyTopicPrefix + "again"
	_, err := e.Route(ctx, name)
	require.NoError(t, err)
	equeue.OnReplyExpiry(e, func(n string) {
		if n != name {
			return
		}
		require.NoError(t, e.DeleteReplyTopic(ctx, name))
		_, err := e.Route(ctx, name)
		require.NoError(t, err)
	})
	equeue.ExpireReplyTopics(e, time.Now().Add(2*time.Hour))
	equeue.OnReplyExpiry(e, nil)
	_, err = e.Topic(ctx, name)
	assert.NoError(t, err, "the expiry deleted a topic it had not found idle")

	// Without a pull, the idle topic itself is deleted as before.
	equeue.ExpireReplyTopics(e, time.Now().Add(2*time.Hour))
	_, err = e.Topic(ctx, name)
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
}
