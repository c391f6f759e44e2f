package watermill_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

// unknownOutcome is a Broker whose third append is stored but answered
// with an error matching equeue.ErrIndeterminate, as an append whose
// context ended after the engine took it is.
type unknownOutcome struct {
	equeue.Broker
	appends atomic.Int32
}

func (b *unknownOutcome) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	res, err := b.Broker.Append(ctx, req)
	if b.appends.Add(1) == 3 && err == nil {
		return equeue.AppendResult{}, fmt.Errorf("%w: answer lost", equeue.ErrIndeterminate)
	}
	return res, err
}

// TestPublishStopsAtTheFailingMessage: Publish sends its messages one
// after the other and stops at the first failure. The messages before it
// are stored, those after it are not sent, and the failing one, whose
// UUID the error names, may be stored when the error matches
// equeue.ErrIndeterminate.
func TestPublishStopsAtTheFailingMessage(t *testing.T) {
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctxT(t), "partial", 1))
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: &unknownOutcome{Broker: e}})
	var msgs []*message.Message
	for i := range 5 {
		msgs = append(msgs, message.NewMessage(wm.NewUUID(), fmt.Appendf(nil, "%d", i)))
	}
	err := pub.Publish("partial", msgs...)
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	assert.Contains(t, err.Error(), msgs[2].UUID, "the error names the failing message")
	assert.EqualValues(t, 3, stored(t, e, "partial"), "the two before it and, here, the failing one; none after it")
}
