package equeue_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A SendAsync's AfterSend hooks run one send after another, also when
// one of them calls Producer.Close: the rest of that send's hooks run
// before the next send's. Close from the hook waits for the broker's
// answer to the sends in flight, not for their hooks, which run once the
// hook returns. Before, Close handed the later sends' hooks to another
// goroutine and waited for them, so they ran before, and beside, the rest
// of the hooks of the send that closed.
func TestProducer_CloseFromAnAfterSendHookKeepsTheHooksInOrder(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	var (
		mu  sync.Mutex
		log []string
	)
	record := func(s string) {
		mu.Lock()
		log = append(log, s)
		mu.Unlock()
	}
	secondSent := make(chan struct{})
	closed := make(chan error, 1)
	var p *equeue.Producer
	first := equeue.Hooks{AfterSend: func(_ context.Context, m *equeue.Message, _ equeue.SendResult, _ error) {
		if string(m.Body) == "closer" {
			<-secondSent // the second send is in flight
			err := p.Close()
			record("closer closed")
			closed <- err
			return
		}
		record(string(m.Body) + " first hook")
	}}
	second := equeue.Hooks{AfterSend: func(_ context.Context, m *equeue.Message, _ equeue.SendResult, _ error) {
		record(string(m.Body) + " second hook")
	}}
	p = newProducer(t, e, &equeue.ProducerOptions{Hooks: []equeue.Hooks{first, second}})
	f1 := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("closer")})
	f2 := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("later")})
	close(secondSent)
	require.NoError(t, waitOrDeadlock(t, closed, "Close from the AfterSend hook never returned"))
	_, err := f1.Result(ctx)
	require.NoError(t, err)
	_, err = f2.Result(ctx)
	require.NoError(t, err)
	require.NoError(t, p.Close())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"closer closed", "closer second hook", "later first hook", "later second hook"}, log)
}
