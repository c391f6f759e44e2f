package equeue_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// retryFirstBroker stores a retry copy of a message just before its first
// dead-letter send-back, as a send-back stored before a crash would have.
type retryFirstBroker struct {
	*equeue.Engine
	once sync.Once
}

func (b *retryFirstBroker) SendBack(ctx context.Context, req *equeue.SendBackRequest) (equeue.SendBackResult, error) {
	if req.DeadLetter {
		var err error
		b.once.Do(func() {
			r := *req
			r.DeadLetter = false
			r.Delay = time.Hour
			_, err = b.Engine.SendBack(ctx, &r)
		})
		if err != nil {
			return equeue.SendBackResult{}, err
		}
	}
	return b.Engine.SendBack(ctx, req)
}

// A DeadLetter the engine answers with an earlier retry copy of the message
// (stored before a crash) is not logged as dead-lettered: the retry stands.
func TestRetry_DeadLetterAnsweredByAnEarlierRetryIsNotLoggedAsDeadLettered(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &retryFirstBroker{Engine: e}
	var logs syncBuffer
	handled := make(chan struct{}, 1)
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), CommitInterval: 50 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error {
			select {
			case handled <- struct{}{}:
			default:
			}
			return equeue.DeadLetter(errors.New("malformed"))
		}})
	_, err := newProducer(t, b, nil).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("bad")})
	require.NoError(t, err)
	<-handled
	eventually(t, 10*time.Second, func() bool {
		offs, err := e.GroupOffsets(ctx, "g")
		return err == nil && offs[equeue.QueueRef{Topic: "t", Queue: 0}] == 1
	}, "the message is finished")
	dls, err := e.DeadLetters(ctx, "g", 0, 10)
	if !errors.Is(err, equeue.ErrTopicNotFound) {
		require.NoError(t, err)
	}
	assert.Empty(t, dls, "the earlier retry copy stands; nothing is dead-lettered")
	out := logs.String()
	assert.NotContains(t, out, "message dead-lettered", "the log must not say what did not happen")
	assert.Contains(t, out, "an earlier retry of it is stored")
}
