package equeue_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// gatedDelayReads is a store whose reads of the delay log wait until gate
// is closed: the scheduler moves nothing before the test is ready.
type gatedDelayReads struct {
	faultstore.Store
	gate chan struct{}
}

func (s gatedDelayReads) Read(q store.QueueID, from, to uint64, max, maxBytes int) ([]store.Record, error) {
	if q == (store.QueueID{}) {
		<-s.gate
	}
	return s.Store.Read(q, from, to, max, maxBytes)
}

// A move too large for any write whose topic is deleted between the
// scheduler's look-up of the topic and the park is no refusal to report:
// the message goes with its topic (DeleteTopic, or DeleteGroup of its
// retry topic). The park used to log it at error level ("too large to
// move") all the same; a real refusal still is, once
// (TestHunt_DelayedMoveTooLargeForAnyWriteStaysPendingAndReported).
func TestDelayed_ParkRacingItsTopicsDeletionLogsNoError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		send   func(e *equeue.Engine, body []byte) error
		delete func(e *equeue.Engine) error
	}{
		{"DeleteTopic", func(e *equeue.Engine, body []byte) error {
			if err := e.CreateTopic(ctxBG, "t", 1); err != nil {
				return err
			}
			_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: body, Delay: 50 * time.Millisecond}}})
			return err
		}, func(e *equeue.Engine) error { return e.DeleteTopic(ctxBG, "t") }},
		{"DeleteGroup", func(e *equeue.Engine, body []byte) error {
			_, err := equeue.AppendInternal(ctxBG, e, &equeue.AppendRequest{Topic: equeue.RetryTopic("g"),
				Messages: []*equeue.Message{{Body: body, Delay: 50 * time.Millisecond}}})
			return err
		}, func(e *equeue.Engine) error { return e.DeleteGroup(ctxBG, "g", equeue.DeleteGroupOptions{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := store.NewMemory()
			e, err := equeue.Open("", &equeue.Options{Store: faultstore.New(keepOpen{mem})})
			require.NoError(t, err)
			require.NoError(t, tc.send(e, bytes.Repeat([]byte("b"), 4096)))
			require.NoError(t, e.Close())

			// Reopened on a store too small for the move, the scheduler
			// waits for the hook, then is held at the park until the
			// deletion returned.
			var logs syncBuffer
			gate := make(chan struct{})
			var gateOnce sync.Once
			openGate := func() { gateOnce.Do(func() { close(gate) }) }
			t.Cleanup(openGate)
			e, err = equeue.Open("", &equeue.Options{
				Store:  faultstore.New(gatedDelayReads{huntLimited{keepOpen{mem}, store.Limits{MaxBytes: 2048}}, gate}),
				Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			require.NoError(t, err)
			defer func() { require.NoError(t, e.Close()) }()
			held, release := make(chan struct{}), make(chan struct{})
			var once, releaseOnce sync.Once
			releaseFn := func() { releaseOnce.Do(func() { close(release) }) }
			t.Cleanup(releaseFn)
			equeue.OnDelayMoveParking(e, func() {
				once.Do(func() {
					close(held)
					select {
					case <-release:
					case <-time.After(waitLong):
					}
				})
			})
			openGate()
			waitClosed(t, held, "the scheduler is about to park the move")
			require.NoError(t, tc.delete(e))
			releaseFn()

			eventually(t, waitLong, func() bool {
				return pendingDelayed(t, e) == 0 && e.Stats().ParkedDelayedMessages == 0
			}, "the message went with its topic")
			// Another due message brings a pass after the park's.
			require.NoError(t, e.CreateTopic(ctxBG, "u", 1))
			_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "u", Messages: []*equeue.Message{{Topic: "u", Body: []byte("u"), Delay: 10 * time.Millisecond}}})
			require.NoError(t, err)
			eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "u", 0)) == 1 }, "the scheduler passed")
			assert.Zero(t, e.Stats().ParkedDelayedMessages)
			assert.Contains(t, logs.String(), "too large", "the park is told, at debug level")
			for _, line := range strings.Split(logs.String(), "\n") {
				assert.NotContains(t, line, "level=ERROR", "a park that raced its topic's deletion is no error")
			}
		})
	}
}
