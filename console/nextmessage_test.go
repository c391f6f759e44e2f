package console_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

var nextMessageRE = regexp.MustCompile(`<a href="([^"]+)">next message</a>`)

// TestGroupPage_NextMessageSkipsTrimmedOffsets: when retention trimmed a
// queue past a lagging group's committed offset, the group page's "next
// message" link pointed at that offset, which the message browser refused
// with 400 (outside the stored range). It points at the queue's first
// stored message instead.
func TestGroupPage_NextMessageSkipsTrimmedOffsets(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "events", 1))
	var msgs []*equeue.Message
	for i := range 10 {
		msgs = append(msgs, &equeue.Message{Body: []byte(fmt.Sprintf("event number %d", i))})
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "events", Queue: 0, Messages: msgs})
	require.NoError(t, err)
	ref := equeue.QueueRef{Topic: "events", Queue: 0}
	require.NoError(t, e.CommitGroupOffsets(ctx, "lagging", map[equeue.QueueRef]int64{ref: 2}))

	// Each size pass trims the oldest tenth (at least one message).
	var minOff int64
	for minOff <= 3 {
		_, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: -1, MaxBytes: 1})
		require.NoError(t, err)
		ti, err := e.Topic(ctx, "events")
		require.NoError(t, err)
		require.Greater(t, ti.Queues[0].MinOffset, minOff, "a pass trims")
		minOff = ti.Queues[0].MinOffset
	}

	s := serve(t, e, console.Options{})
	group := s.get(t, prefix+"groups/lagging")
	require.Equal(t, http.StatusOK, group.status)
	m := nextMessageRE.FindStringSubmatch(group.body)
	require.NotNil(t, m, "the group page links to the next message")
	next := s.get(t, html.UnescapeString(m[1]))
	require.Equal(t, http.StatusOK, next.status, "%s answers: %s", m[1], next.body)
	assert.Contains(t, next.body, fmt.Sprintf("event number %d", minOff), "the first stored message")
	assert.NotContains(t, next.body, fmt.Sprintf("event number %d", minOff-1), "a trimmed one")
}
