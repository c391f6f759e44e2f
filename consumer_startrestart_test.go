package equeue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// restartingBroker is an engine reached as a broker of its own (no
// Unwrap: a remote broker, a cluster node), whose FetchOffsets fails with
// err, telling failed, until restarted is closed: the broker's engine was
// reopened (a restart of the broker, a new leader), which the consumer
// does not see but by the calls that work again.
type restartingBroker struct {
	*equeue.Engine
	err       error
	failed    chan struct{}
	restarted chan struct{}
}

func (b *restartingBroker) FetchOffsets(ctx context.Context, g, m string, q []equeue.Grant) ([]equeue.OffsetCommit, error) {
	select {
	case <-b.restarted:
		return b.Engine.FetchOffsets(ctx, g, m, q)
	default:
	}
	select {
	case b.failed <- struct{}{}:
	default:
	}
	return nil, b.err
}

// A Consumer's Start on a broker that is not this process's engine (over
// remote, a cluster node) whose engine's failure lasts until that engine
// is reopened (a failed fsync, an unusable store, a leader's tenure cut
// short under a call) is not given up: the broker is restarted (remote's
// health turns NOT_SERVING for that) or another node leads, without the
// consumer, which keeps trying and starts once it works again.
func TestConsumer_StartOnABrokerOfItsOwnOutlastsItsRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"store failed", fmt.Errorf("%w: the broker's fsync failed", equeue.ErrStoreFailed)},
		{"unusable", fmt.Errorf("the broker's store: %w", store.ErrUnusable)},
		{"tenure cut short", fmt.Errorf("%w: cluster: cut short: %w", equeue.ErrIndeterminate, equeue.ErrClosed)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
			b := &restartingBroker{Engine: e, err: tc.err, failed: make(chan struct{}, 1), restarted: make(chan struct{})}
			got := make(chan string, 1)
			c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "a",
				Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
				Handler: func(_ context.Context, m *equeue.Message) error {
					select {
					case got <- string(m.Body):
					default:
					}
					return nil
				}})
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			started := make(chan error, 1)
			go func() { started <- c.Start(ctxT(t)) }()
			<-b.failed // the first apply failed
			close(b.restarted)
			require.NoError(t, <-started, "Start keeps trying through the broker's restart")
			p := newProducer(t, e, nil)
			_, err = p.Send(ctxT(t), &equeue.Message{Topic: "t", Body: []byte("after")})
			require.NoError(t, err)
			require.Equal(t, "after", <-got, "the consumer consumes")
		})
	}
}
