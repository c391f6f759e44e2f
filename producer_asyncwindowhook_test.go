package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// appendOnly wraps the engine with an Append of its own, so it owns no
// fast path: SendAsync runs each send as Send, on a goroutine, bounded by
// the producer's window.
type appendOnly struct{ *equeue.Engine }

func (b appendOnly) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	return b.Engine.Append(ctx, req)
}

// An AfterSend hook that calls SendAsync while the producer's window is
// full (here a window of one, taken by the send whose hook runs) gets a
// slot once that send is done: the window counts sends, not hooks. Before,
// the send's goroutine held its slot while its hooks ran, and the hook's
// SendAsync waited for that very slot until its context ended.
func TestProducer_SendAsyncFromAnAfterSendHookWithAFullWindow(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	inner := make(chan *equeue.SendFuture, 1)
	var p *equeue.Producer
	hook := equeue.Hooks{AfterSend: func(hctx context.Context, m *equeue.Message, _ equeue.SendResult, _ error) {
		if string(m.Body) == "outer" {
			inner <- p.SendAsync(hctx, &equeue.Message{Topic: "t", Body: []byte("inner")})
		}
	}}
	p = newProducer(t, appendOnly{e}, &equeue.ProducerOptions{AsyncWindow: 1, Hooks: []equeue.Hooks{hook}})

	outer := p.SendAsync(sctx, &equeue.Message{Topic: "t", Body: []byte("outer")})
	select {
	case <-outer.Done():
	case <-time.After(30 * time.Second): // a deadlock detector, not a timing check
		cancel() // frees the hook, so that the test ends
		<-outer.Done()
		t.Fatal("the AfterSend hook's SendAsync waited for the slot its own send held")
	}
	_, err := outer.Result(ctx)
	require.NoError(t, err)
	res, err := (<-inner).Result(ctx)
	require.NoError(t, err)
	r, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: res.Offset, Max: 1})
	require.NoError(t, err)
	require.Len(t, r.Messages, 1)
	require.Equal(t, "inner", string(r.Messages[0].Body))
}
