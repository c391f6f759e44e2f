package console_test

import (
	"fmt"
	"html"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

// TestGroupPage_BrokerCallsDoNotGrowWithTopics: the group page described
// each of the group's topics with its own Topic call, so a group on 1,000
// topics made 1,001 broker calls per page (and per refresh), each a round
// trip over a remote or cluster broker. A group on more topics than
// GroupTopicCalls is read with one Topics listing instead, and its "next
// message" links still start at each queue's first stored message.
func TestGroupPage_BrokerCallsDoNotGrowWithTopics(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	const n = 40
	offsets := map[equeue.QueueRef]int64{}
	for i := range n {
		name := fmt.Sprintf("t-%02d", i)
		require.NoError(t, e.CreateTopic(ctx, name, 1))
		offsets[equeue.QueueRef{Topic: name, Queue: 0}] = 0
	}
	var msgs []*equeue.Message
	for i := range 10 {
		msgs = append(msgs, &equeue.Message{Body: []byte(fmt.Sprintf("event number %d", i))})
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t-37", Queue: 0, Messages: msgs})
	require.NoError(t, err)
	trimmed := equeue.QueueRef{Topic: "t-37", Queue: 0}
	offsets[trimmed] = 2
	require.NoError(t, e.CommitGroupOffsets(ctx, "wide", offsets))
	var minOff int64
	for minOff <= 3 {
		_, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: -1, MaxBytes: 1})
		require.NoError(t, err)
		ti, err := e.Topic(ctx, "t-37")
		require.NoError(t, err)
		require.Greater(t, ti.Queues[0].MinOffset, minOff, "a pass trims")
		minOff = ti.Queues[0].MinOffset
	}

	cb := &countingBroker{Engine: e}
	s := serve(t, cb, console.Options{})
	group := s.get(t, prefix+"groups/wide")
	require.Equal(t, http.StatusOK, group.status, group.body)
	assert.LessOrEqual(t, cb.calls.Load(), int64(1+console.GroupTopicCalls), "broker calls for a group on %d topics", n)

	links := nextMessageRE.FindAllStringSubmatch(group.body, -1)
	require.Len(t, links, n, "a next message link per queue")
	want := fmt.Sprintf("topics/t-37/messages?queue=0&from=%d", minOff)
	found := false
	for _, m := range links {
		found = found || html.UnescapeString(m[1]) == prefix+want
	}
	assert.True(t, found, "the trimmed queue's link starts at its first stored message (%s)", want)
}
