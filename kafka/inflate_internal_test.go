package kafka

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// inflateServer is a listener over an in-memory engine with topic "t" of
// parts partitions.
func inflateServer(t *testing.T, parts int, opts *Options) *Server {
	t.Helper()
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	require.NoError(t, e.CreateTopic(context.Background(), "t", parts))
	s, err := NewServer(e, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// compressedProduce is a Produce v9 request with a gzip-compressed batch
// for each of topic "t"'s first parts partitions.
func compressedProduce(parts int, timeoutMillis int32) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = -1, timeoutMillis
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	for p := range int32(parts) {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, compressBatch(seedBatch(), codecGzip)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestProduce_InflatingIsBounded: a request with many compressed
// partitions, each of which may inflate to maxDecompressed, has at most
// the listener's bound of them decompressed at once; the others wait
// their turn and are stored too.
func TestProduce_InflatingIsBounded(t *testing.T) {
	const parts = 8
	s := inflateServer(t, parts, nil)
	var (
		mu            sync.Mutex
		arrived, in   int
		peak          int
		all, release  = make(chan struct{}), make(chan struct{})
		closeAllOnce  sync.Once
		arrivedLocked = func() {
			arrived++
			if arrived == parts {
				closeAllOnce.Do(func() { close(all) })
			}
		}
	)
	s.inflate.waiting = func() {
		mu.Lock()
		arrivedLocked()
		mu.Unlock()
	}
	s.inflate.entered = func(waited bool) {
		mu.Lock()
		if !waited {
			arrivedLocked()
		}
		in++
		peak = max(peak, in)
		mu.Unlock()
		<-release
		mu.Lock()
		in--
		mu.Unlock()
	}
	c := newConn(s, discardConn{})
	defer c.cancel()
	done := make(chan *kmsg.ProduceResponse, 1)
	go func() {
		resp, err := c.produce(compressedProduce(parts, 60_000))
		assert.NoError(t, err)
		done <- resp
	}()
	select {
	case <-all:
	case <-time.After(time.Minute):
		t.Fatal("not every partition came to decompress")
	}
	close(release)
	resp := <-done
	mu.Lock()
	assert.LessOrEqual(t, peak, defaultMaxInflating, "batches decompressed at once")
	mu.Unlock()
	require.Len(t, resp.Topics, 1)
	for _, p := range resp.Topics[0].Partitions {
		assert.Equal(t, errNone, p.ErrorCode, "partition %d", p.Partition)
	}
}

// TestProduce_InflateWaitTimesOut: a compressed partition that cannot get
// its turn within the request's timeout is answered REQUEST_TIMED_OUT,
// which clients retry, and nothing of it is stored.
func TestProduce_InflateWaitTimesOut(t *testing.T) {
	s := inflateServer(t, 2, &Options{MaxInflating: 1})
	s.inflate.slots <- struct{}{} // the one turn, taken
	c := newConn(s, discardConn{})
	defer c.cancel()
	resp, err := c.produce(compressedProduce(2, 50))
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	for _, p := range resp.Topics[0].Partitions {
		assert.Equal(t, errRequestTimedOut, p.ErrorCode, "partition %d", p.Partition)
	}
	<-s.inflate.slots
	resp, err = c.produce(compressedProduce(2, 50))
	require.NoError(t, err)
	for _, p := range resp.Topics[0].Partitions {
		assert.Equal(t, errNone, p.ErrorCode, "partition %d", p.Partition)
		assert.Equal(t, int64(0), p.BaseOffset, "partition %d: the timed out batch was not stored", p.Partition)
	}
}

// TestNewServer_MaxInflating: a negative bound is refused.
func TestNewServer_MaxInflating(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	_, err = NewServer(e, &Options{MaxInflating: -1})
	require.ErrorIs(t, err, equeue.ErrInvalidOptions)
	_, err = NewServer(e, &Options{MaxInflatedBytes: -1})
	require.ErrorIs(t, err, equeue.ErrInvalidOptions)
}

// TestProduce_InflatedBytesAreBounded: once a compressed batch is
// decoded it holds its inflated size of the listener's byte budget until
// it is stored, so batches that would go over the budget wait (a request
// timing out is answered REQUEST_TIMED_OUT, nothing stored), while
// uncompressed batches do not wait; a batch larger than the whole budget
// is stored once the budget is free.
func TestProduce_InflatedBytesAreBounded(t *testing.T) {
	s := inflateServer(t, 2, &Options{MaxInflating: 8, MaxInflatedBytes: 64})
	ctx := context.Background()
	require.NoError(t, s.inflate.reserve(ctx, 64)) // the whole budget, taken
	c := newConn(s, discardConn{})
	defer c.cancel()
	resp, err := c.produce(compressedProduce(2, 50))
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	for _, p := range resp.Topics[0].Partitions {
		assert.Equal(t, errRequestTimedOut, p.ErrorCode, "partition %d: no room for its inflated records", p.Partition)
	}
	assert.Len(t, s.inflate.slots, 0, "the waits gave their turns back")

	plain := compressedProduce(1, 50)
	plain.Topics[0].Partitions[0].Records = seedBatch()
	resp, err = c.produce(plain)
	require.NoError(t, err)
	assert.Equal(t, errNone, resp.Topics[0].Partitions[0].ErrorCode, "an uncompressed batch takes none of the budget")

	s.inflate.unreserve(64)
	resp, err = c.produce(compressedProduce(2, 50))
	require.NoError(t, err)
	for _, p := range resp.Topics[0].Partitions {
		assert.Equal(t, errNone, p.ErrorCode, "partition %d", p.Partition)
	}
	s.inflate.bytes.mu.Lock()
	assert.Equal(t, int64(64), s.inflate.bytes.free, "every stored batch gave its bytes back")
	s.inflate.bytes.mu.Unlock()
}

// TestProduce_InflateWaitWithoutATimeoutIsBounded: a request with no
// timeout (TimeoutMillis <= 0, as some acks=0 clients send) waits for the
// inflate gate no longer than defaultProduceWait, then its compressed
// partitions are answered REQUEST_TIMED_OUT instead of being held until
// the connection closes.
func TestProduce_InflateWaitWithoutATimeoutIsBounded(t *testing.T) {
	defer func(d time.Duration) { defaultProduceWait = d }(defaultProduceWait)
	defaultProduceWait = 50 * time.Millisecond
	s := inflateServer(t, 2, &Options{MaxInflating: 1})
	s.inflate.slots <- struct{}{} // the one turn, taken
	c := newConn(s, discardConn{})
	defer c.cancel()
	for _, timeout := range []int32{0, -1} {
		done := make(chan *kmsg.ProduceResponse, 1)
		go func() {
			resp, err := c.produce(compressedProduce(2, timeout))
			assert.NoError(t, err)
			done <- resp
		}()
		var resp *kmsg.ProduceResponse
		select {
		case resp = <-done:
		case <-time.After(30 * time.Second):
			c.cancel() // let the held request go
			<-done
			t.Fatalf("timeout %d: the request was still held waiting for the inflate gate", timeout)
		}
		require.NotNil(t, resp)
		require.Len(t, resp.Topics, 1)
		for _, p := range resp.Topics[0].Partitions {
			assert.Equal(t, errRequestTimedOut, p.ErrorCode, "timeout %d, partition %d", timeout, p.Partition)
		}
	}
}
