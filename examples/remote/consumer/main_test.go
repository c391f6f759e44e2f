package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// lockedBuffer is a bytes.Buffer that handlers running at once may write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// With -n the consumer stops by itself once it handled that many jobs,
// and its Close commits them: the group has nothing left to handle.
func TestConsumer_StopsAfterNJobsAndCommits(t *testing.T) {
	ctx := context.Background()
	eng, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, eng.Close()) })
	require.NoError(t, eng.CreateTopic(ctx, "jobs", 4))
	p, err := equeue.NewProducer(eng, nil)
	require.NoError(t, err)
	const jobs = 20
	for i := range jobs {
		_, err := p.Send(ctx, &equeue.Message{Topic: "jobs", Body: fmt.Appendf(nil, "job %d", i)})
		require.NoError(t, err)
	}
	require.NoError(t, p.Close())
	srv, err := remote.NewServer(eng, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		require.NoError(t, <-served)
	})

	var out lockedBuffer
	require.NoError(t, run(ctx, lis.Addr().String(), jobs, &out))
	assert.Equal(t, jobs, bytes.Count(out.buf.Bytes(), []byte("handled ")), out.buf.String())
	g, err := eng.Group(ctx, "workers")
	require.NoError(t, err)
	var queues int
	for _, q := range g.Queues {
		if q.Topic == "jobs" {
			queues++
			assert.Zero(t, q.Lag, "queue %d", q.Queue)
		}
	}
	assert.Equal(t, 4, queues)
	assert.Empty(t, g.Members, "the consumer left the group")
}
