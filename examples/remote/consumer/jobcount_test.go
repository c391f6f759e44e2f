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

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// lineWriter passes each line the consumer prints on, never blocking its
// handler (lines has room for all the test's).
type lineWriter struct{ lines chan string }

func (w lineWriter) Write(p []byte) (int, error) {
	w.lines <- strings.TrimSpace(string(p))
	return len(p), nil
}

// A job delivered again is counted once: a repeat does not stand in for a
// job not handled yet, and done closes once, when every job was handled.
func TestConsumer_RepeatDoesNotStandInForAMissingJob(t *testing.T) {
	jobs := newJobCount(2)
	a := &equeue.Message{ID: "a", Topic: "jobs"}
	b := &equeue.Message{ID: "b", Topic: "jobs", Offset: 1}
	jobs.handled(a)
	jobs.handled(a) // a again
	select {
	case <-jobs.done:
		t.Fatal("done after one job handled twice")
	default:
	}
	require.NotPanics(t, func() {
		jobs.handled(b)
		jobs.handled(b)
		jobs.handled(&equeue.Message{ID: "c", Topic: "jobs", Offset: 2})
	})
	select {
	case <-jobs.done:
	default:
		t.Fatal("not done after both jobs were handled")
	}
	// Without -n the consumer runs until interrupted and keeps no IDs.
	forever := newJobCount(0)
	forever.handled(a)
	assert.Empty(t, forever.seen)
}

// Through a remote broker: the group is reset to the earliest offset after
// the consumer handled both jobs sent so far, so it gets them again. With
// -n 3 it goes on until a third job was sent and handled, instead of
// stopping on the repeats.
func TestConsumer_RedeliveriesDoNotEndTheRunEarly(t *testing.T) {
	ctx := context.Background()
	eng, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, eng.Close()) })
	require.NoError(t, eng.CreateTopic(ctx, "jobs", 1))
	p, err := equeue.NewProducer(eng, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	send := func(i int) {
		t.Helper()
		_, err := p.Send(ctx, &equeue.Message{Topic: "jobs", Body: fmt.Appendf(nil, "job %d", i)})
		require.NoError(t, err)
	}
	send(0)
	send(1)
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

	out := lineWriter{lines: make(chan string, 1024)}
	ran := make(chan error, 1)
	go func() { ran <- run(ctx, lis.Addr().String(), 3, out) }()
	var lines []string
	// await reads n more lines the consumer prints; false if run ended.
	await := func(n int) bool {
		t.Helper()
		for range n {
			select {
			case l := <-out.lines:
				lines = append(lines, l)
			case err := <-ran:
				require.NoError(t, err)
				return false
			case <-time.After(time.Minute):
				t.Fatalf("no line within a minute; so far %q", lines)
			}
		}
		return true
	}
	require.True(t, await(2), "run ended before handling the two jobs: %q", lines)
	require.NoError(t, eng.ResetOffsets(ctx, "workers", equeue.ResetRequest{To: equeue.ResetToEarliest}))
	if !await(2) {
		t.Fatalf("run ended on the repeats, with a job still to come: %q", lines)
	}
	send(2)
	for done := false; !done; {
		select {
		case l := <-out.lines:
			lines = append(lines, l)
		case err := <-ran:
			require.NoError(t, err)
			done = true
		case <-time.After(time.Minute):
			t.Fatalf("run did not end within a minute of the third job; lines %q", lines)
		}
	}
	for len(out.lines) > 0 {
		lines = append(lines, <-out.lines)
	}
	assert.Contains(t, strings.Join(lines, "\n"), `handled "job 2"`)
}
