package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// A dlq redrive whose calls the client's transport refuses for their
// headers (its token over the server's --max-metadata-bytes) hints at
// that bound, not at --to-topic, though the refusal matches
// equeue.ErrInvalidArgument as the engine's refusal of a redrive into a
// retry topic the group does not consume does. Its group lookup
// (DescribeGroup, a longer method name than Redrive's, the rest of the
// headers alike) is the call refused, whatever the token's length: a
// Redrive refused after a lookup that passed (the server's bound lowered
// in between) is TestDLQ_RedriveErrorHintMatchesItsCause's.
func TestDLQ_RedriveRefusedForItsHeadersHintsAtTheMetadataBound(t *testing.T) {
	t.Parallel()
	const bound = 4 << 10
	d := t.TempDir()
	deadLettersOf(t, d, "audit", equeue.Broadcasting, 1)
	addr := freePort(t)
	srv := startServe(t, "--dir", d, "--listen", addr, "--max-metadata-bytes", "4096")
	eventually(t, 20*time.Second, "serve answers", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		return cli(t, "--server", addr, "topic", "list").code == 0
	})
	redrive := func(n int) result {
		return cli(t, "--server", addr, "--token", strings.Repeat("k", n), "dlq", "redrive", "audit", "--all")
	}
	r := redrive(2 * bound)
	require.Contains(t, r.stderr, "header list size", "a token twice the bound is refused: %v", r)
	assert.Equal(t, exitUsage, r.code, "%v", r)
	assert.NotContains(t, r.stderr, "--to-topic", "the hint names the real cause: %v", r)
	assert.Contains(t, r.stderr, "--max-metadata-bytes", "%v", r)
	// With a short token, the engine's own refusal still tells to give --to-topic.
	r = redrive(1)
	assert.Contains(t, r.stderr, "--to-topic", "%v", r)
	assert.NotContains(t, r.stderr, "--max-metadata-bytes", "%v", r)
}

// The redrive's own decoration of its error: a Redrive call refused by the
// client's transport for its headers, after a group lookup that passed (a
// token whose DescribeGroup fitted, a limit lowered in between), is not
// the engine's refusal of a group without a retry topic, and its printed
// line says so instead of telling to give --to-topic.
func TestDLQ_RedriveErrorHintMatchesItsCause(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := equeue.Open(t.TempDir(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, e.Close()) })
	srv, err := remote.NewServer(e, &remote.ServerOptions{MaxMetadataBytes: 4 << 10})
	require.NoError(t, err)
	gs := grpc.NewServer(srv.GRPCServerOptions()...)
	srv.Register(gs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		gs.Stop()
		<-served
	})
	c, err := remote.Dial(lis.Addr().String(), &remote.ClientOptions{Token: strings.Repeat("k", 8<<10), DialTimeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, headersErr := c.Redrive(ctx, "audit", equeue.RedriveRequest{All: true})
	require.ErrorIs(t, headersErr, equeue.ErrInvalidArgument, "the refusal matches ErrInvalidArgument")

	broadcasting := equeue.GroupInfo{Name: "audit", Subscriptions: []equeue.Subscription{{Topic: "payments"}}}
	line := func(err error) string { return "equeue: " + errorText(err) + hint(err) }

	got := line(redriveError(headersErr, false, broadcasting))
	assert.NotContains(t, got, "--to-topic", got)
	assert.Contains(t, got, "--max-metadata-bytes", got)

	engineErr := fmt.Errorf("%w: broadcasting group %q has no retry topic", equeue.ErrInvalidArgument, "audit")
	got = line(redriveError(engineErr, false, broadcasting))
	assert.Contains(t, got, "(give --to-topic)", "the engine's refusal keeps its hint: %s", got)
	assert.NotContains(t, got, "--max-metadata-bytes", got)
}
