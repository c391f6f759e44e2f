package equeue_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// TestTopicLimits_MaxBytesSetWhileATrimWaits sets a MaxBytes on a topic
// held at a drop-oldest MaxMessages while a send's trim, which found the
// topic over the old limits, waits for SetTopicLimits to finish counting
// the topic's bytes. The trim then cuts under the limits in force: the
// byte account stays known and exact, and the sends after it each leave
// the topic at its MaxMessages (with an account left unknown, it grew with
// every send until the byte limit deleted every message, the one just sent
// too).
func TestTopicLimits_MaxBytesSetWhileATrimWaits(t *testing.T) {
	ctx := ctxT(t)
	cs := &countingStore{Store: store.NewMemory()}
	e, err := equeue.Open("", &equeue.Options{Store: cs, Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	size := recordSize(t, e, "m-00") // every body below has this length
	send := func(i int) {
		t.Helper()
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(fmt.Sprintf("m-%02d", i))}}})
		require.NoError(t, err)
	}
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{MaxMessages: 2}}))
	for i := range 3 {
		send(i) // the third send trims one message, uncounted: no MaxBytes yet
	}

	// SetTopicLimits counts the topic's bytes under the topic's trim lock:
	// hold its read of the records.
	in, held := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(held) })
	t.Cleanup(release)
	var once sync.Once
	hold := func(_ store.QueueID, _ uint64, v []byte) []byte {
		once.Do(func() { close(in); <-held })
		return v
	}
	cs.corrupt.Store(&hold)
	// Raising MaxMessages to 3 leaves SetTopicLimits nothing to trim: the
	// waiting trim is the only one.
	limits := equeue.TopicLimits{MaxMessages: 3, MaxBytes: 10 * size}
	set := make(chan error, 1)
	go func() { set <- e.SetTopicLimits(ctx, "t", limits) }()
	<-in

	sent := make(chan struct{})
	go func() { defer close(sent); send(3) }() // stored; its trim waits for the count
	eventually(t, 5*time.Second, func() bool { return blockedOnLock("trimOver") }, "the send's trim waits for SetTopicLimits")
	release()
	require.NoError(t, <-set)
	<-sent
	cs.corrupt.Store(nil)
	topicBytes(t, e, "t")

	for i := 4; i < 30; i++ {
		send(i)
		info, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		require.EqualValues(t, 3, info.Messages, "after send %d the topic holds its MaxMessages", i)
	}
	require.Equal(t, 3*size, topicBytes(t, e, "t"))
}
