package main

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The broker serves its directory until its context ends (the signal
// main waits for), then stops and closes the engine without an error:
// what a client sent is in the directory afterwards.
func TestBroker_ServesUntilStoppedAndClosesTheEngine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- run(serveCtx, dir, lis) }()

	client, err := remote.Dial(lis.Addr().String(), &remote.ClientOptions{DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	p, err := equeue.NewProducer(client, nil)
	require.NoError(t, err)
	sendCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = p.Send(sendCtx, &equeue.Message{Topic: "jobs", Body: []byte("job 0")})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	require.NoError(t, client.Close())

	stop()
	select {
	case err := <-ran:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the broker did not stop")
	}

	eng, err := equeue.Open(dir, nil)
	require.NoError(t, err, "the broker left its directory open")
	defer func() { require.NoError(t, eng.Close()) }()
	info, err := eng.Topic(ctx, "jobs")
	require.NoError(t, err)
	var stored int64
	for _, q := range info.Queues {
		stored += q.MaxOffset - q.MinOffset
	}
	assert.Equal(t, int64(1), stored)
}
