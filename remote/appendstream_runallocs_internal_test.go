package remote

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// answerAtOnce is an asynchronous backend that answers every append on the
// caller's goroutine, allocating nothing itself.
type answerAtOnce struct{}

func (answerAtOnce) AppendAsync(_ context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	cb(equeue.AppendResult{Queue: req.Queue}, nil)
}

// Starting one streamed append costs the broker its answer callback,
// nothing per append beyond it: the callback variable used to be moved to
// the heap as well, since the goroutine of a backend without AppendAsync
// captured it, and the callback's once-flag was an allocation of its own
// (now a field of the append's decoded item): two more allocations per
// message of every SendAsync.
func TestAppendStream_RunAllocatesOnlyTheAnswer(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	s, err := NewServer(e, nil)
	require.NoError(t, err)
	defer s.Stop()
	v := *s.svc
	v.async = answerAtOnce{}
	a := &appendStream{v: &v, ctx: context.Background(), rights: RightAll, wake: make(chan struct{}, 1)}
	req := &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("b")}}}
	it := streamIn{seq: 1, present: true, d: directAppend{topic: "t", req: req}}
	run := func() {
		it.answered.Store(false) // each run is a new append
		a.run(&it, false)
		// The answer is queued; the answering side would take it.
		a.results = a.results[:0]
	}
	run() // the answers' slice, once
	got := testing.AllocsPerRun(1000, run)
	require.LessOrEqual(t, got, 1.0, "allocations per streamed append")
	require.Zero(t, s.inFlight.Load(), "every append gave its slot back")
}
