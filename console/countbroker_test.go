package console_test

import (
	"context"
	"sync/atomic"

	"github.com/equeue-go/equeue"
)

// countingBroker is an engine that counts the calls the console makes of
// it, the optional extras (Stats, Delayed) included.
type countingBroker struct {
	*equeue.Engine
	calls atomic.Int64
}

func (b *countingBroker) Topics(ctx context.Context) ([]equeue.TopicInfo, error) {
	b.calls.Add(1)
	return b.Engine.Topics(ctx)
}

func (b *countingBroker) Topic(ctx context.Context, name string) (equeue.TopicInfo, error) {
	b.calls.Add(1)
	return b.Engine.Topic(ctx, name)
}

func (b *countingBroker) Groups(ctx context.Context) ([]equeue.GroupInfo, error) {
	b.calls.Add(1)
	return b.Engine.Groups(ctx)
}

func (b *countingBroker) Group(ctx context.Context, name string) (equeue.GroupInfo, error) {
	b.calls.Add(1)
	return b.Engine.Group(ctx, name)
}

func (b *countingBroker) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	b.calls.Add(1)
	return b.Engine.Pull(ctx, req)
}

func (b *countingBroker) Delayed(ctx context.Context, max int) (equeue.DelayedInfo, error) {
	b.calls.Add(1)
	return b.Engine.Delayed(ctx, max)
}

func (b *countingBroker) Stats() equeue.Stats {
	b.calls.Add(1)
	return b.Engine.Stats()
}
