package main

import (
	"bytes"
	"context"
	"net"
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

// The producer sends its jobs to the broker, closes its producer and
// client without an error and returns.
func TestProducer_SendsEveryJob(t *testing.T) {
	ctx := context.Background()
	eng, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, eng.Close()) })
	require.NoError(t, eng.CreateTopic(ctx, "jobs", 4))
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

	var out bytes.Buffer
	require.NoError(t, run(ctx, lis.Addr().String(), 20, &out))
	assert.Equal(t, 20, bytes.Count(out.Bytes(), []byte("sent job ")), out.String())
	info, err := eng.Topic(ctx, "jobs")
	require.NoError(t, err)
	var stored int64
	for _, q := range info.Queues {
		stored += q.MaxOffset - q.MinOffset
	}
	assert.Equal(t, int64(20), stored)
}
