package cluster

import (
	"sync"

	"github.com/hashicorp/raft"
)

// A leader's pipeline to a follower must not wedge.
//
// hashicorp/raft (v1.7.3) replicates to a follower that keeps up through
// the transport's pipeline: one goroutine sends AppendEntries calls, a
// second (pipelineDecode) reads their answers from the pipeline's
// Consumer channel. The network transport's pipeline hands each call to
// its decoder and each decoded answer to that channel, both through
// channels of MaxRPCsInFlight-2 slots: none at the default of 2. When the
// follower answers a call with Success=false (a gap or a term mismatch:
// a deposed leader that comes back with entries nobody else has, a
// follower that restarted) or with a newer term, pipelineDecode returns
// and nobody reads the Consumer channel again. The decoder then blocks
// handing over its next answer, the sender's next call blocks handing its
// request to the decoder, and the pipeline is closed only after the
// sender returns: neither ever does. The follower keeps receiving
// heartbeats, which carry neither entries nor the commit index, so it
// never starts an election and never learns another commit: its store
// stays where it was (its Raft log may be complete), and when its leader
// steps down or shuts down, Raft waits for the wedged goroutine forever.
// (hashicorp/raft issue 612; the multi-process test found it after a
// SIGSTOP of the leader.)
//
// drainedPipeline keeps reading the transport's answers itself, in a
// goroutine of its own, and queues them for Raft until Raft reads them or
// the pipeline closes. The decoder never blocks on Raft, so every call
// returns (after at most the transport's timeout when the follower is
// silent), the sender sees that pipelineDecode ended, and Raft closes the
// pipeline and falls back to plain calls, which recover from a refusal.
// The queue holds at most the answers to the calls sent after Raft
// stopped reading: the sender checks for that end before each call.
type drainedPipeline struct {
	inner raft.AppendPipeline
	clamp func(*raft.AppendEntriesRequest)
	note  func(raft.AppendFuture) // sees each answer that arrived (lease.go)
	out   chan raft.AppendFuture  // what Raft reads

	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

var _ raft.AppendPipeline = (*drainedPipeline)(nil)

func newDrainedPipeline(inner raft.AppendPipeline, clamp func(*raft.AppendEntriesRequest), note func(raft.AppendFuture)) *drainedPipeline {
	p := &drainedPipeline{inner: inner, clamp: clamp, note: note, out: make(chan raft.AppendFuture),
		stop: make(chan struct{}), done: make(chan struct{})}
	go p.forward()
	return p
}

// forward moves the transport's answers, in order, to out, never blocking
// the transport on Raft.
func (p *drainedPipeline) forward() {
	defer close(p.done)
	in := p.inner.Consumer()
	var queue []raft.AppendFuture
	for {
		var out chan raft.AppendFuture
		var next raft.AppendFuture
		if len(queue) > 0 {
			out, next = p.out, queue[0]
		}
		select {
		case f := <-in:
			if p.note != nil {
				// Not f.Error(): its first caller caches the error unguarded,
				// and the caller of AppendEntries may wait on it. A call that
				// failed leaves its response empty, which notes nothing.
				p.note(f)
			}
			queue = append(queue, f)
		case out <- next:
			queue[0] = nil
			queue = queue[1:]
		case <-p.stop:
			return
		}
	}
}

// AppendEntries sends args (its commit index clamped) down the pipeline.
func (p *drainedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	if p.clamp != nil {
		p.clamp(args)
	}
	return p.inner.AppendEntries(args, resp)
}

// Consumer returns the answers, in the order of the calls.
func (p *drainedPipeline) Consumer() <-chan raft.AppendFuture { return p.out }

// Close closes the transport's pipeline and stops forwarding; answers not
// read are dropped, as the transport's own Close drops them.
func (p *drainedPipeline) Close() error {
	var err error
	p.closeOnce.Do(func() {
		err = p.inner.Close()
		close(p.stop)
		<-p.done
	})
	return err
}
