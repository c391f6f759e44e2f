package kafka_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// dropProxy forwards connections to a listener. Armed, it swallows the
// next Produce response and cuts that connection: the broker stored the
// batch, the client never hears so, as when a network fails.
type dropProxy struct {
	lis     net.Listener
	target  string
	armed   atomic.Bool
	dropped atomic.Int32
	mu      sync.Mutex
	conns   []net.Conn
	wg      sync.WaitGroup
}

func startProxy(t *testing.T, lis net.Listener, target string) *dropProxy {
	p := &dropProxy{lis: lis, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			keys := &sync.Map{} // correlation ID -> API key
			p.wg.Add(2)
			go func() { defer p.wg.Done(); p.pipe(c, s, keys, true) }()
			go func() { defer p.wg.Done(); p.pipe(s, c, keys, false) }()
		}
	}()
	t.Cleanup(func() {
		_ = lis.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// pipe copies frames from src to dst; requests record their API key,
// responses are checked against it.
func (p *dropProxy) pipe(src, dst net.Conn, keys *sync.Map, requests bool) {
	defer func() { _ = src.Close(); _ = dst.Close() }()
	for {
		var size [4]byte
		if _, err := io.ReadFull(src, size[:]); err != nil {
			return
		}
		frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
		copy(frame, size[:])
		if _, err := io.ReadFull(src, frame[4:]); err != nil {
			return
		}
		if requests && len(frame) >= 12 {
			keys.Store(binary.BigEndian.Uint32(frame[8:]), binary.BigEndian.Uint16(frame[4:]))
		}
		if !requests && len(frame) >= 8 {
			key, _ := keys.LoadAndDelete(binary.BigEndian.Uint32(frame[4:]))
			if key == uint16(0) && p.armed.CompareAndSwap(true, false) {
				p.dropped.Add(1)
				return
			}
		}
		if _, err := dst.Write(frame); err != nil {
			return
		}
	}
}

// TestKgo_IdempotentRetryAfterLostAnswer: franz-go's idempotent producer
// resends a batch whose answer was lost; the listener recognizes the
// sequence numbers and the batch is stored once, at the offsets the client
// was told.
func TestKgo_IdempotentRetryAfterLostAnswer(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	plis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := serve(t, e, &kafka.Options{AdvertisedAddr: plis.Addr().String()})
	proxy := startProxy(t, plis, addr)
	cl := kclient(t, plis.Addr().String(), kgo.DefaultProduceTopic("t"), kgo.ProducerLinger(0))
	for i := range 10 {
		if i == 3 {
			proxy.armed.Store(true)
		}
		r := &kgo.Record{Value: fmt.Appendf(nil, "m%d", i)}
		require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
		assert.Equal(t, int64(i), r.Offset)
	}
	require.Equal(t, int32(1), proxy.dropped.Load(), "one answer was lost")
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 100})
	require.NoError(t, err)
	var bodies []string
	for _, m := range res.Messages {
		bodies = append(bodies, string(m.Body))
	}
	assert.Equal(t, []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"}, bodies, "each stored once")
}
