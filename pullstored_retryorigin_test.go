package equeue_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// PullStored reads a retry copy's origin topic as it scans the record,
// without decoding it into a message: a pull of a retry topic allocates
// no more per copy than a pull of a topic whose records name no origin.
// A decode per copy (a map of system properties and its strings) would
// show as several allocations per copy.
func TestPullStored_RetryCopiesAreNotDecoded(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	require.NoError(t, e.CreateTopic(ctx, "plain", 1))
	origin, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	const n = 64
	var copies, plain []*equeue.Message
	for range n {
		m := &equeue.Message{Body: []byte("body")}
		m.SetSysProperties(map[string]string{equeue.SysOriginTopic: "t", equeue.SysOriginTopicID: strconv.FormatUint(uint64(origin.ID), 10),
			equeue.SysOriginQueue: "0", equeue.SysOriginOffset: "0"})
		copies = append(copies, m)
		plain = append(plain, &equeue.Message{Body: []byte("body")})
	}
	_, err = equeue.AppendInternal(ctx, e, &equeue.AppendRequest{Topic: equeue.RetryTopic("g"), Messages: copies})
	require.NoError(t, err)
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "plain", Messages: plain})
	require.NoError(t, err)

	allocs := func(topic string) float64 {
		req := &equeue.PullRequest{Topic: topic, Max: n}
		res, stored, err := e.PullStored(ctx, req)
		require.NoError(t, err)
		require.Equal(t, n, stored.Len(), "every copy of %s is delivered", topic)
		require.Zero(t, res.DeletedTopicRetries)
		return testing.AllocsPerRun(20, func() {
			_, _, _ = e.PullStored(ctx, req)
		})
	}
	retries, others := allocs(equeue.RetryTopic("g")), allocs("plain")
	t.Logf("allocations per PullStored of %d records: retry topic %.0f, plain topic %.0f", n, retries, others)
	assert.Less(t, retries, others+n/4, "a retry topic's records are scanned, not decoded")
}
