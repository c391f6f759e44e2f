package equeue

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// heldMetaRead is a store that, while armed, holds the next read of key
// after it read the value: it reports on read and returns once release is
// closed.
type heldMetaRead struct {
	Store
	key     []byte
	armed   atomic.Bool
	read    chan struct{}
	release chan struct{}
}

func (s *heldMetaRead) GetMeta(key []byte) ([]byte, error) {
	v, err := s.Store.GetMeta(key)
	if bytes.Equal(key, s.key) && s.armed.CompareAndSwap(true, false) {
		close(s.read)
		<-s.release
	}
	return v, err
}

// A listing that read a lost redriven mark just before the mark was
// deleted (with its dead-letter topic) neither counts the loss a second
// time (Stats().CorruptRecords) nor leaves a note of it that nothing
// drops any more: the mark it read is gone.
func TestLostRedrivenNotes_AListingOverlappingTheDeletionLeavesNone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := &heldMetaRead{Store: store.NewMemory(), key: redrivenKey("g", 0), read: make(chan struct{}), release: make(chan struct{})}
	e, err := Open("", &Options{Store: st, Retention: RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()

	dlq := DLQTopic("g")
	m := &Message{Body: []byte("dl")}
	m.SetSysProperties(map[string]string{SysOriginTopic: "t", SysOriginQueue: "0", SysOriginOffset: fmt.Sprint(0)})
	_, err = e.Append(allowInternal(ctx, dlq), &AppendRequest{Topic: dlq, Messages: []*Message{m}})
	require.NoError(t, err)
	require.NoError(t, st.Store.Write(&store.Batch{Meta: []store.MetaOp{{Key: redrivenKey("g", 0), Value: []byte{0}}}})) // garbled
	dls, err := e.ListDeadLetters(ctx, "g", ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.True(t, dls[0].Redriven)
	require.Equal(t, 1, lostRedrivenEntries(e))
	counted := e.Stats().CorruptRecords

	st.armed.Store(true)
	listed := make(chan error, 1)
	go func() {
		_, err := e.ListDeadLetters(ctx, "g", ListDeadLettersRequest{})
		listed <- err
	}()
	select {
	case <-st.read:
	case <-ctx.Done():
		t.Fatal("the listing did not read the mark")
	}
	require.NoError(t, e.DeleteTopic(ctx, dlq))
	close(st.release)
	require.NoError(t, <-listed)

	_, err = st.Store.GetMeta(redrivenKey("g", 0))
	require.ErrorIs(t, err, store.ErrNotFound, "the mark went with its topic")
	assert.Zero(t, lostRedrivenEntries(e), "no note is left of the deleted mark")
	assert.Equal(t, counted, e.Stats().CorruptRecords, "the loss is counted once")
}
