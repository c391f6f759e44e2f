package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// The redrive part of TestCluster_JepsenFeatures: group redriveGroup
// dead-letters the first delivery of every message of topic redriveTopic
// (MaxAttempts 1) and handles any later one, while a redriver sends the
// group's dead letters back (Redrive All) every 300 ms through the
// nemesis. Every acknowledged message must end up handled, once in the
// topic, and in the group's retry topic (where the redrives send it, and
// nothing else does: MaxAttempts is 1) at most as often as it is in the
// dead letters: a dead letter is never redriven twice.
const (
	redriveTopic = "rd"
	redriveGroup = "grd"
)

type redriveWorkload struct {
	j        *jepsen
	consumer *equeue.Consumer
	stop     context.CancelFunc
	done     sync.WaitGroup

	mu        sync.Mutex
	ops       []jepsenOp
	failed    map[string]bool // deliveries dead-lettered
	handled   map[string]bool
	redriven  int
	redriveEr map[string]int // redrive errors by text
}

func (j *jepsen) startRedrive() *redriveWorkload {
	r := &redriveWorkload{j: j, failed: map[string]bool{}, handled: map[string]bool{}, redriveEr: map[string]int{}}
	c, err := equeue.NewConsumer(j.cc, equeue.ConsumerOptions{
		Group: redriveGroup, Subscriptions: []equeue.Subscription{{Topic: redriveTopic}},
		HeartbeatInterval: 200 * time.Millisecond, CommitInterval: 100 * time.Millisecond,
		MaxAttempts: 1, LocalRetryDelay: 100 * time.Millisecond, SendBackRetryDelay: 200 * time.Millisecond,
		Handler: func(_ context.Context, m *equeue.Message) error {
			v := string(m.Body)
			r.mu.Lock()
			defer r.mu.Unlock()
			if !r.failed[v] {
				r.failed[v] = true
				return errHandler
			}
			r.handled[v] = true
			return nil
		},
	})
	require.NoError(j.t, err)
	require.NoError(j.t, c.Start(context.Background()))
	r.consumer = c
	ctx, stop := context.WithCancel(context.Background())
	r.stop = stop
	r.done.Go(func() {
		for ctx.Err() == nil {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			n, err := j.cc.Redrive(cctx, redriveGroup, equeue.RedriveRequest{All: true})
			cancel()
			r.mu.Lock()
			r.redriven += n
			if err != nil && ctx.Err() == nil {
				r.redriveEr[err.Error()]++
			}
			r.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	})
	return r
}

// send appends one message to redriveTopic and records its outcome.
func (r *redriveWorkload) send(ctx context.Context, value string, queue int) {
	op := r.j.appendOne(ctx, redriveTopic, queue, value, time.Time{})
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// unhandled lists the acknowledged messages not handled yet.
func (r *redriveWorkload) unhandled() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, op := range r.ops {
		if op.outcome == opOK && !r.handled[op.value] {
			out = append(out, op.value)
		}
	}
	return out
}

// close stops the redriver and the group.
func (r *redriveWorkload) close() {
	r.stop()
	r.done.Wait()
	closeConsumer(r.j.t, r.consumer)
}

// check reads the topic and the dead letters from every stopped node.
func (r *redriveWorkload) check() {
	t := r.j.t
	stored, dead := r.j.readEveryNode(redriveTopic), r.j.readEveryNode(equeue.DLQTopic(redriveGroup))
	retried := r.j.readEveryNode(equeue.RetryTopic(redriveGroup))
	byValue := map[string]jepsenOp{}
	counts := map[outcome]int{}
	for _, op := range r.ops {
		byValue[op.value] = op
		counts[op.outcome]++
	}
	inTopic, inDLQ, inRetry := countValues(stored), countValues(dead), countValues(retried)
	for v, n := range inTopic {
		op, ok := byValue[v]
		if !assert.True(t, ok, "%q was never sent", v) {
			continue
		}
		assert.NotEqual(t, opFailed, op.outcome, "%q was refused (%s) but is stored", v, op.err)
		assert.Equal(t, 1, n, "%q in the topic %d times: a redrive went there", v, n)
	}
	for v, n := range inRetry {
		assert.LessOrEqual(t, n, inDLQ[v], "%q in the retry topic %d times with %d dead letters: a dead letter redriven twice", v, n, inDLQ[v])
	}
	for _, op := range r.ops {
		if op.outcome == opOK {
			q := stored[op.queue]
			assert.True(t, op.offset < int64(len(q)) && q[op.offset] == op.value, "acknowledged %q at %d/%d", op.value, op.queue, op.offset)
		}
	}
	errs := slices.Sorted(func(yield func(string) bool) {
		for e, n := range r.redriveEr {
			if !yield(fmt.Sprintf("%dx %s", n, e)) {
				return
			}
		}
	})
	t.Logf("redrive: sends %d ok, %d refused, %d unknown; %d dead letters, %d redriven; redrive errors: %v",
		counts[opOK], counts[opFailed], counts[opUnknown], len(inDLQ), r.redriven, errs)
}

// countValues counts each value of a topic's queues.
func countValues(queues map[int][]string) map[string]int {
	out := map[string]int{}
	for _, vals := range queues {
		for _, v := range vals {
			out[v]++
		}
	}
	return out
}
