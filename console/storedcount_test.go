package console_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
	"github.com/equeue-go/equeue/store"
)

// queueRowRE matches a queue's row of the topic page: ID, min offset,
// max offset and messages.
var queueRowRE = regexp.MustCompile(`<td>(\d+)</td>\s*<td class="r">([\d,]+)</td>\s*<td class="r">([\d,]+)</td>\s*<td class="r">([\d,]+)</td>`)

// The topic page counts the messages a queue stores, not its offsets'
// span: offsets lost from the store (Open raised the queue's end over
// them; see the README's Durability) hold none.
func TestTopicPage_CountsStoredMessagesNotLostOffsets(t *testing.T) {
	dir := t.TempDir()
	ctx := ctxT(t)
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for i := range 20 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "m-%d", i)}}})
		require.NoError(t, err)
	}
	ref := equeue.QueueRef{Topic: "t", Queue: 0}
	require.NoError(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{ref: 20}))
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	require.NoError(t, e.Close())

	// Damage takes offsets 2 to 19 from the store; g's offset proves 20
	// were given out.
	st, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	require.NoError(t, st.DeleteRange(store.QueueID{Topic: info.ID, Queue: 0}, 2, 20))
	require.NoError(t, st.Close())

	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	info, err = e.Topic(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, int64(20), info.Queues[0].MaxOffset, "Open raised the queue's end over the lost offsets")
	assert.Equal(t, int64(2), info.Queues[0].Messages)

	s := serve(t, e, console.Options{})
	p := s.get(t, prefix+"topics/t")
	require.Equal(t, 200, p.status, p.body)
	assert.Contains(t, p.body, "2 message(s) stored")
	row := queueRowRE.FindStringSubmatch(p.body)
	require.NotNil(t, row, "the page has a queue row")
	assert.Equal(t, []string{"0", "0", "20", "2"}, row[1:], "queue 0: offsets 0 to 20, 2 messages")
}

// A topic with priorities shows its lanes, and a message stored in a
// lane above 0 shows its priority.
func TestTopicPage_ShowsPriorities(t *testing.T) {
	e := openEngine(t)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 3}))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()
	r, err := p.Send(ctx, &equeue.Message{Topic: "p", Body: []byte("urgent"), Priority: 2})
	require.NoError(t, err)

	s := serve(t, e, console.Options{})
	page := s.get(t, prefix+"topics/p")
	require.Equal(t, 200, page.status, page.body)
	assert.Contains(t, page.body, "3 priority lanes")
	page = s.get(t, fmt.Sprintf("%stopics/p/messages/%d/%d", prefix, r.Queue, r.Offset))
	require.Equal(t, 200, page.status, page.body)
	assert.Regexp(t, `<dt>Priority</dt><dd>2</dd>`, page.body)
}
