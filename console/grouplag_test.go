package console_test

import (
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

// TestLag_BroadcastingGroupIsItsSlowestMember: the lag the console shows
// for a broadcasting group (overview, group and topic pages, the count a
// reset to the latest skips) is, per queue, that of its slowest member, as
// equeue_group_lag says: one message neither member consumed yet is a lag
// of one, not one per member. The pages summed the members' rows.
func TestLag_BroadcastingGroupIsItsSlowestMember(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "news", 2))
	for _, c := range startReaders(t, e) {
		require.NoError(t, c.Close())
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "news", Queue: 1, Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	g, err := e.Group(ctx, "readers")
	require.NoError(t, err)
	require.Len(t, g.Queues, 4, "each member has its offsets: %+v", g.Queues)
	s := serve(t, e, console.Options{})

	overview := s.get(t, prefix).body
	assert.Regexp(t, regexp.MustCompile(`Total lag</div><div class="v warn">1</div>`), overview, "overview total")
	assert.Regexp(t, regexp.MustCompile(`>readers</a></td><td>broadcasting</td><td>news</td><td class="r">0</td><td class="r warn">1</td>`), overview, "overview row")

	group := s.get(t, prefix+"groups/readers")
	assert.Contains(t, group.body, `id="total-lag">1</div>`, "group page")

	topic := s.get(t, prefix+"topics/news").body
	assert.Regexp(t, regexp.MustCompile(`>readers</a></td><td class="r warn">1</td>`), topic, "topic page")

	reset := s.post(t, prefix+"groups/readers/reset", url.Values{"csrf": {csrf(t, group)}, "to": {"latest"}})
	assert.Contains(t, reset.body, "1 pending message(s) will be skipped", "reset confirmation")
}
