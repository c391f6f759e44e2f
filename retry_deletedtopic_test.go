package equeue_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A retry copy whose origin topic was deleted before it was due is not
// delivered: the group's pull of its retry topic skips it and counts it
// on a counter of its own (Stats().DeletedTopicRetries), not as an
// expired message, and the group goes on with its other messages and
// retries.
func TestRetry_CopyOfADeletedTopicIsNotDelivered(t *testing.T) {
	forTransports(t, testRetry_CopyOfADeletedTopicIsNotDelivered)
}

func testRetry_CopyOfADeletedTopicIsNotDelivered(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	require.NoError(t, e.CreateTopic(ctx, "other", 1))
	sendBackDue(t, b, "g", "t", "old")
	require.NoError(t, e.DeleteTopic(ctx, "t"))

	seen := startRecordingConsumer(t, b, "g", "other")
	_, err := newProducer(t, b, nil).Send(ctx, &equeue.Message{Topic: "other", Body: []byte("own")})
	require.NoError(t, err)
	// The group's own retry is stored after the old copy: once it is
	// delivered, the pull has passed the old copy.
	seen.waitFor(t, "own", 1)
	for _, s := range seen.all() {
		assert.NotEqual(t, "old", s.body, "the copy of the deleted topic's message is not delivered (it showed topic %q)", s.topic)
		assert.Equal(t, "other", s.topic)
	}
	st := e.Stats()
	assert.Equal(t, uint64(1), st.DeletedTopicRetries, "the skipped copy is counted as a retry of a deleted topic")
	assert.Zero(t, st.ExpiredMessages, "the skipped copy is not counted as an expired message")
}

// A retry copy whose origin topic was deleted and made again under its
// name is not delivered as a message of the new topic, which never had
// it; the new topic's group gets its own messages and its own retries.
func TestRetry_CopyOfATopicMadeAgainIsNotDelivered(t *testing.T) {
	forTransports(t, testRetry_CopyOfATopicMadeAgainIsNotDelivered)
}

func testRetry_CopyOfATopicMadeAgainIsNotDelivered(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	sendBackDue(t, b, "g", "t", "old")
	old, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	copies, err := e.Pull(ctx, &equeue.PullRequest{Topic: equeue.RetryTopic("g")})
	require.NoError(t, err)
	require.Len(t, copies.Messages, 1)
	assert.Equal(t, strconv.FormatUint(uint64(old.ID), 10), copies.Messages[0].SysProperty(equeue.SysOriginTopicID), "the copy carries its origin topic's ID")
	require.NoError(t, e.DeleteTopic(ctx, "t"))
	require.NoError(t, e.CreateTopic(ctx, "t", 1))

	seen := startRecordingConsumer(t, b, "g", "t")
	_, err = newProducer(t, b, nil).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("own")})
	require.NoError(t, err)
	seen.waitFor(t, "own", 1)
	for _, s := range seen.all() {
		assert.NotEqual(t, "old", s.body, "the old topic's copy is not delivered as a message of the new one")
	}
	assert.Equal(t, []int{0, 1}, seen.attempts("own"), "the new topic's message and its own retry are delivered")
	st := e.Stats()
	assert.Equal(t, uint64(1), st.DeletedTopicRetries, "the skipped copy is counted as a retry of a deleted topic")
	assert.Zero(t, st.ExpiredMessages, "the skipped copy is not counted as an expired message")
}

// Retry copies stored before copies carried their origin topic's ID are
// delivered while a topic of their origin's name exists, and skipped once
// none does.
func TestRetry_CopyWithoutOriginIDNeedsItsTopic(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for _, origin := range []string{"gone", "t", "t"} {
		m := &equeue.Message{Body: []byte(origin)}
		m.SetSysProperties(map[string]string{equeue.SysOriginTopic: origin, equeue.SysOriginQueue: "0", equeue.SysOriginOffset: "0"})
		_, err := equeue.AppendInternal(ctx, e, &equeue.AppendRequest{Topic: equeue.RetryTopic("g"), Messages: []*equeue.Message{m}})
		require.NoError(t, err)
	}
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m",
		Subscriptions: []equeue.Subscription{{Topic: "t"}, {Topic: equeue.RetryTopic("g")}}})
	require.NoError(t, err)
	var g equeue.Grant
	for _, q := range a.Queues {
		if q.Topic == equeue.RetryTopic("g") {
			g = q
		}
	}
	require.Equal(t, equeue.RetryTopic("g"), g.Topic)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: g.Topic, Queue: g.Queue, Group: "g", Member: "m", Epoch: g.Epoch})
	require.NoError(t, err)
	require.Len(t, res.Messages, 2, "the copies whose origin exists are delivered")
	assert.Equal(t, []int64{1, 2}, []int64{res.Messages[0].Offset, res.Messages[1].Offset})
	assert.Equal(t, 1, res.DeletedTopicRetries, "the copy whose origin is gone is skipped")
	assert.Zero(t, res.Expired, "and not reported as expired")

	require.NoError(t, e.DeleteTopic(ctx, "t"))
	res, err = e.Pull(ctx, &equeue.PullRequest{Topic: g.Topic, Queue: g.Queue, Offset: 1, Group: "g", Member: "m", Epoch: g.Epoch})
	require.NoError(t, err)
	assert.Empty(t, res.Messages, "once their origin is deleted they are skipped too")
	assert.Equal(t, equeue.PullNoMatch, res.Status)
	assert.Equal(t, int64(3), res.NextOffset, "the pull moves past them")
	assert.Equal(t, 2, res.DeletedTopicRetries)
	assert.Zero(t, res.Expired)
	st := e.Stats()
	assert.Equal(t, uint64(3), st.DeletedTopicRetries, "the group's pulls count what they skipped")
	assert.Zero(t, st.ExpiredMessages)
}

// A browse of a retry topic (a read without a group, in process, with
// PullStored as the remote server reads, and over the transports) leaves
// out the copies of a deleted topic and reports them in
// PullResult.DeletedTopicRetries, not as expired messages; it counts
// nothing in Stats, as a browse counts no expired message. A copy whose
// time-to-live ran out is still reported as expired.
func TestRetry_BrowseReportsCopiesOfADeletedTopicApart(t *testing.T) {
	forTransports(t, testRetry_BrowseReportsCopiesOfADeletedTopicApart)
}

func testRetry_BrowseReportsCopiesOfADeletedTopicApart(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	require.NoError(t, e.CreateTopic(ctx, "live", 1))
	sendBackDue(t, b, "g", "t", "old")
	require.NoError(t, e.DeleteTopic(ctx, "t"))
	ttl := &equeue.Message{Body: []byte("ttl"), ExpiresAt: time.Now().Add(-time.Hour)}
	ttl.SetSysProperties(map[string]string{equeue.SysOriginTopic: "live", equeue.SysOriginQueue: "0", equeue.SysOriginOffset: "0"})
	_, err := equeue.AppendInternal(ctx, e, &equeue.AppendRequest{Topic: equeue.RetryTopic("g"), Messages: []*equeue.Message{ttl}})
	require.NoError(t, err)
	before := e.Stats()

	req := &equeue.PullRequest{Topic: equeue.RetryTopic("g")}
	check := func(how string, res equeue.PullResult) {
		t.Helper()
		assert.Equal(t, equeue.PullNoMatch, res.Status, how)
		assert.Equal(t, int64(2), res.NextOffset, how)
		assert.Equal(t, 1, res.DeletedTopicRetries, "%s: the copy of the deleted topic is reported apart", how)
		assert.Equal(t, 1, res.Expired, "%s: only the copy whose time-to-live ran out is expired", how)
	}
	res, err := e.Pull(ctx, req)
	require.NoError(t, err)
	check("Pull", res)
	res, stored, err := e.PullStored(ctx, req)
	require.NoError(t, err)
	assert.Zero(t, stored.Len())
	check("PullStored", res)
	res, err = b.Pull(ctx, req)
	require.NoError(t, err)
	check("over "+tr, res)
	assert.Equal(t, before, e.Stats(), "a browse counts nothing")
}

// sendBackDue has a member of group pull the message body it appends to
// topic (queue 0) and send it back to the group's retry topic, due at
// once; the member then leaves. Nothing consumes the copy meanwhile.
func sendBackDue(t *testing.T, b equeue.Broker, group, topic, body string) {
	t.Helper()
	ctx := ctxT(t)
	_, err := b.Append(ctx, &equeue.AppendRequest{Topic: topic, Messages: []*equeue.Message{{Body: []byte(body)}}})
	require.NoError(t, err)
	g, res := joinAndPull(t, b, group, "early", topic)
	require.Len(t, res.Messages, 1)
	sb, err := b.SendBack(ctx, &equeue.SendBackRequest{Group: group, Member: "early", Grant: g, Offset: res.Messages[0].Offset, Attempts: 1, Cause: "failed"})
	require.NoError(t, err)
	require.Equal(t, equeue.RetryTopic(group), sb.Topic)
	require.NoError(t, b.LeaveGroup(ctx, &equeue.LeaveRequest{Group: group, Member: "early"}))
}

// delivery is what a handler saw of one delivery.
type delivery struct {
	body, topic string
	attempt     int
}

// deliveries records a consumer's deliveries.
type deliveries struct {
	mu  sync.Mutex
	got []delivery
}

func (d *deliveries) all() []delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]delivery(nil), d.got...)
}

// attempts returns the attempt of each delivery of body, in order.
func (d *deliveries) attempts(body string) []int {
	var out []int
	for _, s := range d.all() {
		if s.body == body {
			out = append(out, s.attempt)
		}
	}
	return out
}

// waitFor waits until body was delivered at the given attempt.
func (d *deliveries) waitFor(t *testing.T, body string, attempt int) {
	t.Helper()
	eventually(t, 10*time.Second, func() bool {
		for _, s := range d.all() {
			if s.body == body && s.attempt == attempt {
				return true
			}
		}
		return false
	}, "%q delivered at attempt %d", body, attempt)
}

// startRecordingConsumer starts a member of group on topic (and the
// group's retry topic) that records each delivery and fails the first
// attempt of each message, retried at once.
func startRecordingConsumer(t *testing.T, b equeue.Broker, group, topic string) *deliveries {
	d := new(deliveries)
	startConsumer(t, b, equeue.ConsumerOptions{Group: group, Subscriptions: []equeue.Subscription{{Topic: topic}},
		RetryTopicDelays: []time.Duration{time.Millisecond},
		Handler: func(_ context.Context, m *equeue.Message) error {
			d.mu.Lock()
			d.got = append(d.got, delivery{body: string(m.Body), topic: m.Topic, attempt: m.Attempt})
			d.mu.Unlock()
			if m.Attempt == 0 {
				return errors.New("first attempt fails")
			}
			return nil
		}})
	return d
}
