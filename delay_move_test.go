package equeue_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// delayReadFault is a memory store whose reads of one delay-log slot fail
// once, and whose first write of a moved message (a batch deleting a delay
// index key) waits until that read has failed.
type delayReadFault struct {
	*store.Memory
	failSlot uint64

	mu       sync.Mutex
	failed   bool
	readFail chan struct{} // closed when the read of failSlot failed
	held     bool
}

func (s *delayReadFault) Read(q store.QueueID, from, to uint64, max, maxBytes int) ([]store.Record, error) {
	if q == delayLog && from == s.failSlot {
		s.mu.Lock()
		fail := !s.failed
		s.failed = true
		s.mu.Unlock()
		if fail {
			close(s.readFail)
			return nil, errors.New("injected read failure")
		}
	}
	return s.Memory.Read(q, from, to, max, maxBytes)
}

func (s *delayReadFault) Write(b *store.Batch) error {
	deletesDelayKey := false
	for _, op := range b.Meta {
		deletesDelayKey = deletesDelayKey || (op.Delete && bytes.HasPrefix(op.Key, []byte("d/")))
	}
	if deletesDelayKey {
		s.mu.Lock()
		hold := !s.held
		s.held = true
		s.mu.Unlock()
		if hold {
			<-s.readFail
		}
	}
	return s.Memory.Write(b)
}

// A failed read of one due message must not leave the moves the scheduler
// already queued unwaited: each is then neither trimmed from the delay log
// nor safe from being queued again by the next scan.
func TestDelay_ReadFailureWaitsForQueuedMoves(t *testing.T) {
	ctx := ctxT(t)
	mem := store.NewMemory()
	st := &delayReadFault{Memory: mem, failSlot: 1, readFail: make(chan struct{})}
	e, err := equeue.Open("", &equeue.Options{Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))

	at := time.Now().Add(50 * time.Millisecond)
	res, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{
		{Topic: "t", Body: []byte("a"), DeliverAt: at},
		{Topic: "t", Body: []byte("b"), DeliverAt: at},
	}})
	require.NoError(t, err)
	require.True(t, res.Delayed)

	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) >= 2 }, "both delivered")
	// Every moved message's delay-log record is trimmed, without a reopen.
	eventually(t, 5*time.Second, func() bool {
		_, _, ok, err := mem.Bounds(delayLog)
		require.NoError(t, err)
		return !ok
	}, "delay log trimmed")
	assert.Equal(t, []string{"a", "b"}, queueBodies(t, e, "t", 0), "each delivered once")
}

// A delayed message whose record is damaged in the delay log is reported
// corrupt once due, as any damaged record is, and never delivered: the
// move must not seal the damage again under a valid checksum. The intact
// message moved with it is delivered.
func TestDelay_DamagedRecordIsReportedNotDelivered(t *testing.T) {
	ctx := ctxT(t)
	cs := &countingStore{Store: store.NewMemory()}
	e, err := equeue.Open("", &equeue.Options{Store: cs})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	flip := func(q store.QueueID, _ uint64, v []byte) []byte {
		if i := bytes.Index(v, []byte("damaged")); q == delayLog && i >= 0 {
			v = bytes.Clone(v)
			v[i] ^= 0x40 // "damaged" reads as "$amaged"
		}
		return v
	}
	cs.corrupt.Store(&flip)
	at := time.Now().Add(30 * time.Millisecond)
	res, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{
		{Topic: "t", Body: []byte("damaged"), DeliverAt: at},
		{Topic: "t", Body: []byte("intact"), DeliverAt: at},
	}})
	require.NoError(t, err)
	require.True(t, res.Delayed)

	var pull equeue.PullResult
	eventually(t, waitLong, func() bool {
		pull, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
		require.NoError(t, err)
		return pull.NextOffset == 2
	}, "both moved")
	bodies := make([]string, 0, len(pull.Messages))
	for _, m := range pull.Messages {
		bodies = append(bodies, string(m.Body))
	}
	assert.Equal(t, []string{"intact"}, bodies, "the damaged message is not delivered")
	assert.Equal(t, []int64{0}, pull.Corrupt, "it is reported corrupt at its offset")
	assert.Equal(t, uint64(1), e.Stats().CorruptRecords)
}
