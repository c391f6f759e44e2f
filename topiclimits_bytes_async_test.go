package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// On a store whose writes complete asynchronously (a replicated store),
// the writer counts a send's bytes when it writes the batch, before the
// store holds it. A MaxBytes set meanwhile counts the bytes stored without
// losing that send's: the limit then refuses the send that passes it
// (found by review: the count read the store up to the writer's offset,
// took the send's offset for a lost one of size 0, and the limit let the
// topic grow past it by that send's bytes).
func TestTopicLimits_MaxBytesSetWhileASendIsInFlight(t *testing.T) {
	ctx := ctxT(t)
	mem := store.NewMemory()
	// The bytes are counted from the store for a queue the engine opened
	// with records in it (one it made empty counts them as it goes).
	e, err := equeue.Open("", &equeue.Options{Store: keepOpen{mem}})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	require.NoError(t, e.Close())

	st := &gatedAsyncStore{Memory: mem}
	e, err = equeue.Open("", &equeue.Options{Store: st})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	send := func() error {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		return err
	}

	waiting, started := make(chan struct{}, 1), make(chan struct{}, 1)
	st.mu.Lock()
	st.gate, st.waiting = make(chan struct{}), waiting
	st.mu.Unlock()
	sent := make(chan error, 1)
	go func() { sent <- send() }()
	<-waiting // written and counted by the writer, not yet stored
	st.mu.Lock()
	st.started = started
	st.mu.Unlock()
	// Records of one-byte bodies take about 22 bytes: two fit, three do not.
	set := make(chan error, 1)
	go func() {
		set <- e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxBytes: 50, Overflow: equeue.OverflowReject})
	}()
	<-started // the limits' own write: the bytes are counted
	st.mu.Lock()
	close(st.gate)
	st.gate = nil
	st.mu.Unlock()
	require.NoError(t, <-sent)
	require.NoError(t, <-set)

	assert.ErrorIs(t, send(), equeue.ErrTopicFull, "the topic holds two records: a third passes MaxBytes")
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(2), info.Messages)
}
