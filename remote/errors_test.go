package remote_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	"github.com/equeue-go/equeue/store"
)

// TestErrors_SentinelsMapBack provokes each engine error through the client
// and checks that errors.Is finds the same sentinel, with the right code.
func TestErrors_SentinelsMapBack(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, &equeue.Options{
		MaxMessageSize: 1024,
		Store:          store.NewMemoryWithLimits(store.Limits{MaxEntries: 16}),
	})
	require.NoError(t, c.CreateTopic(ctx, "t", 2))
	require.NoError(t, c.CreateTopic(ctx, "closed", 1))
	require.NoError(t, c.SetQueueWritable(ctx, "closed", 0, false))
	a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.NotEmpty(t, a.Queues)
	one := func(body string) []*equeue.Message { return []*equeue.Message{{Body: []byte(body)}} }
	many := make([]*equeue.Message, 20)
	for i := range many {
		many[i] = &equeue.Message{Body: []byte("x")}
	}
	interval0 := equeue.SyncInterval(0)

	cases := []struct {
		name string
		call func() error
		want error
		code codes.Code
	}{
		{"topic not found", func() error { _, err := c.Route(ctx, "nope"); return err }, equeue.ErrTopicNotFound, codes.NotFound},
		{"topic exists", func() error { return c.CreateTopic(ctx, "t", 1) }, equeue.ErrTopicExists, codes.AlreadyExists},
		{"invalid name", func() error { return c.CreateTopic(ctx, "a b", 1) }, equeue.ErrInvalidName, codes.InvalidArgument},
		{"queue not found", func() error {
			_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 9, Messages: one("x")})
			return err
		}, equeue.ErrQueueNotFound, codes.NotFound},
		{"group not found", func() error { _, err := c.Group(ctx, "nope"); return err }, equeue.ErrGroupNotFound, codes.NotFound},
		{"invalid filter", func() error { _, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Filter: "||"}); return err }, equeue.ErrInvalidFilter, codes.InvalidArgument},
		{"invalid argument", func() error { _, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: -1}); return err }, equeue.ErrInvalidArgument, codes.InvalidArgument},
		{"invalid options", func() error {
			_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: one("x"), Sync: &interval0})
			return err
		}, equeue.ErrInvalidOptions, codes.InvalidArgument},
		{"message too large", func() error {
			_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: one(strings.Repeat("z", 2048))})
			return err
		}, equeue.ErrMessageTooLarge, codes.InvalidArgument},
		{"batch too large", func() error {
			_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: many})
			return err
		}, equeue.ErrBatchTooLarge, codes.InvalidArgument},
		{"queue not writable", func() error {
			_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "closed", Messages: one("x")})
			return err
		}, equeue.ErrQueueNotWritable, codes.FailedPrecondition},
		{"fenced", func() error {
			_, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: a.Queues[0].Queue, Group: "g", Member: "m", Epoch: a.Queues[0].Epoch + 100})
			return err
		}, equeue.ErrFenced, codes.FailedPrecondition},
		{"not member", func() error {
			_, err := c.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "stranger"})
			return err
		}, equeue.ErrNotMember, codes.FailedPrecondition},
		{"subscription mismatch", func() error {
			_, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m2", Subscriptions: []equeue.Subscription{{Topic: "closed"}}})
			return err
		}, equeue.ErrSubscriptionMismatch, codes.FailedPrecondition},
		{"deadline", func() error {
			dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			_, err := c.Pull(dctx, &equeue.PullRequest{Topic: "t", Wait: 10 * time.Second})
			return err
		}, context.DeadlineExceeded, codes.DeadlineExceeded},
		{"canceled", func() error {
			cctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(50*time.Millisecond, cancel)
			_, err := c.Heartbeat(cctx, &equeue.HeartbeatRequest{Group: "g", Member: "m", KnownVersion: a.Version, Wait: 10 * time.Second})
			return err
		}, context.Canceled, codes.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.want)
			assert.Equal(t, tc.code, status.Code(err), "code of %v", err)
			for _, other := range []error{equeue.ErrClosed, remote.ErrUnavailable} {
				assert.NotErrorIs(t, err, other)
			}
		})
	}

	// A commit mixing a fenced queue and a negative offset matches both.
	err = c.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m", Offsets: []equeue.OffsetCommit{
		{Grant: equeue.Grant{QueueRef: a.Queues[0].QueueRef, Epoch: 999}, Offset: 1},
		{Grant: a.Queues[0], Offset: -1},
	}})
	assert.ErrorIs(t, err, equeue.ErrFenced)
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)
	var re *remote.Error
	require.ErrorAs(t, err, &re)
	assert.Equal(t, codes.FailedPrecondition, re.Code)
	assert.Contains(t, re.Message, "stale epoch")

	// The broker's engine closes: retryable ErrUnavailable, never ErrClosed.
	require.NoError(t, e.Close())
	_, err = c.Route(ctx, "t")
	assert.ErrorIs(t, err, remote.ErrUnavailable)
	assert.NotErrorIs(t, err, equeue.ErrClosed)
	assert.Equal(t, codes.Unavailable, status.Code(err))

	// Only the client's own Close gives ErrClosed.
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	_, err = c.Route(ctx, "t")
	assert.ErrorIs(t, err, equeue.ErrClosed)
}

func TestErrors_TransportDown(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	s.stop()
	c := dial(t, s.addr, nil)
	_, err := c.Route(ctx, "t")
	require.Error(t, err)
	assert.ErrorIs(t, err, remote.ErrUnavailable)
	assert.NotErrorIs(t, err, equeue.ErrClosed)

	_, err = remote.Dial(s.addr, &remote.ClientOptions{DialTimeout: 200 * time.Millisecond})
	assert.ErrorIs(t, err, remote.ErrUnavailable)
}

func TestErrors_BadOptions(t *testing.T) {
	_, err := remote.NewServer(nil, nil)
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)
	e := openEngine(t, nil)
	_, err = remote.NewServer(e, &remote.ServerOptions{MaxInFlight: -1})
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions)
	_, err = remote.NewServer(e, &remote.ServerOptions{Tokens: map[string]remote.Rights{"": remote.RightAll}})
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions)
	_, err = remote.Dial("127.0.0.1:1", &remote.ClientOptions{DialTimeout: -1})
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions)
}
