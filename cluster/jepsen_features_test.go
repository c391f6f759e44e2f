package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestCluster_JepsenFeatures runs the nemesis of TestCluster_Jepsen while
// the engine's features work through it, beside the gRPC workers:
//
//   - a group fails some messages of "jepsen" once (they come back through
//     its retry topic) and some always (dead-lettered after MaxAttempts);
//   - delayed sends, read by another group;
//   - sends to a topic capped at cappedMax messages (OverflowReject);
//   - a group that dead-letters every first delivery while a redriver
//     sends its dead letters back (jepsen_redrive_test.go);
//   - two members of a broadcasting group on "jepsen";
//   - a Producer sending with SendAsync, pipelined on the cluster client's
//     append stream, into the base history;
//   - requests answered by a group with Reply (jepsen_request_test.go).
//
// After the heal every acknowledged message must have been handled or
// dead-lettered as its kind says and nothing else dead-lettered; every
// acknowledged delayed message delivered, never before its time, and
// stored once; the capped topic never past its limit, with every
// acknowledged send in it and no refused one; every redriven message
// handled and none stored more than once plus once per dead letter; each
// broadcasting member given every acknowledged message; the base checks
// hold for the SendAsync sends; and no request gets another's reply. EQUEUE_CLUSTER_LONG=1 runs 30
// rounds instead of 3.
func TestCluster_JepsenFeatures(t *testing.T) {
	runJepsen(t, jepsenConfig{features: true})
}

// How the retrying group treats a value of topic "jepsen".
type valueKind int

const (
	handleAtOnce valueKind = iota
	failOnce               // fails its first attempt, then succeeds
	failAlways             // fails every attempt: dead-lettered
)

func kindOf(value string) valueKind {
	h := fnv.New32a()
	_, _ = h.Write([]byte(value))
	switch h.Sum32() % 5 {
	case 0:
		return failAlways
	case 1:
		return failOnce
	}
	return handleAtOnce
}

const (
	retryGroup     = "gretry"
	broadcastGroup = "gbcast"
	delayGroup     = "gdelay"
	delayedTopic   = "delayed"
	delayBy        = time.Second
	cappedTopic    = "capped"
	cappedMax      = 10
)

var errHandler = errors.New("handler fails on purpose")

// featureWorkload is the features' clients and what they saw.
type featureWorkload struct {
	j *jepsen

	stopProduce context.CancelFunc
	producers   sync.WaitGroup
	delayAcked  atomic.Int64
	consumers   []*equeue.Consumer

	mu       sync.Mutex
	handled  map[string]bool      // retryGroup: handled without error
	attempts map[string][]int     // retryGroup: Message.Attempt of each call
	delays   map[string]time.Time // delayed sends: value → DeliverAt
	dOps     map[string]outcome   // delayed sends: value → outcome
	early    []string             // delayed values delivered before DeliverAt
	got      map[string]bool      // delayGroup: delivered
	capped   []jepsenOp           // sends to cappedTopic

	rd *redriveWorkload
	rq *requestWorkload

	broadcast map[string]map[string]bool // broadcastGroup: member → values received
}

func (j *jepsen) startFeatures() *featureWorkload {
	t := j.t
	f := &featureWorkload{j: j, handled: map[string]bool{}, attempts: map[string][]int{},
		delays: map[string]time.Time{}, dOps: map[string]outcome{}, got: map[string]bool{}}
	retry, err := equeue.NewConsumer(j.cc, equeue.ConsumerOptions{
		Group: retryGroup, Subscriptions: []equeue.Subscription{{Topic: "jepsen"}},
		HeartbeatInterval: 200 * time.Millisecond, CommitInterval: 100 * time.Millisecond,
		RetryTopicDelays: []time.Duration{200 * time.Millisecond}, MaxAttempts: 2,
		LocalRetryDelay: 100 * time.Millisecond, SendBackRetryDelay: 200 * time.Millisecond,
		Handler: func(_ context.Context, m *equeue.Message) error {
			v := string(m.Body)
			f.mu.Lock()
			defer f.mu.Unlock()
			f.attempts[v] = append(f.attempts[v], m.Attempt)
			switch kindOf(v) {
			case failAlways:
				return errHandler
			case failOnce:
				if m.Attempt == 0 {
					return errHandler
				}
			}
			f.handled[v] = true
			return nil
		},
	})
	require.NoError(t, err)
	delayed, err := equeue.NewConsumer(j.cc, equeue.ConsumerOptions{
		Group: delayGroup, Subscriptions: []equeue.Subscription{{Topic: delayedTopic}},
		HeartbeatInterval: 200 * time.Millisecond, CommitInterval: 100 * time.Millisecond,
		Handler: func(_ context.Context, m *equeue.Message) error {
			now := time.Now()
			v := string(m.Body)
			f.mu.Lock()
			defer f.mu.Unlock()
			if at, ok := f.delays[v]; ok && now.Before(at) {
				f.early = append(f.early, fmt.Sprintf("%s %v early", v, at.Sub(now)))
			}
			f.got[v] = true
			return nil
		},
	})
	require.NoError(t, err)
	consumers := []*equeue.Consumer{retry, delayed}
	// Two members of a broadcasting group, each to receive every message.
	f.broadcast = map[string]map[string]bool{}
	for _, id := range []string{"b1", "b2"} {
		got := map[string]bool{}
		f.broadcast[id] = got
		c, err := equeue.NewConsumer(j.cc, equeue.ConsumerOptions{
			Group: broadcastGroup, ID: id, Model: equeue.Broadcasting, Subscriptions: []equeue.Subscription{{Topic: "jepsen"}},
			HeartbeatInterval: 200 * time.Millisecond, CommitInterval: 100 * time.Millisecond,
			Handler: func(_ context.Context, m *equeue.Message) error {
				f.mu.Lock()
				got[string(m.Body)] = true
				f.mu.Unlock()
				return nil
			},
		})
		require.NoError(t, err)
		consumers = append(consumers, c)
	}
	for _, c := range consumers {
		require.NoError(t, c.Start(context.Background()))
		f.consumers = append(f.consumers, c)
	}
	ctx, stop := context.WithCancel(context.Background())
	f.stopProduce = stop
	f.producers.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			f.sendDelayed(ctx, fmt.Sprintf("d-%d", i), i%2)
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	prod, err := equeue.NewProducer(j.cc, nil)
	require.NoError(t, err)
	f.producers.Go(func() { f.sendAsyncLoop(ctx, prod) })
	f.rd = j.startRedrive()
	f.rq = j.startRequests()
	f.producers.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			f.rd.send(ctx, fmt.Sprintf("rd-%d", i), i%2)
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Millisecond):
			}
		}
	})
	f.producers.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			f.sendCapped(ctx, fmt.Sprintf("cap-%d", i), i%2)
			select { // full amid the first round; refused through the rest
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	return f
}

// sendAsyncLoop sends values to "jepsen" with Producer.SendAsync, up to 16
// in flight, until ctx ends: through the cluster client's pipelined append
// stream to the leader (remote.ClusterClient.AppendAsync), whose refusals
// it sends again to the next leader and whose unknown outcomes it must
// not. Their outcomes join the gRPC workers' history, so the run's checks
// cover them.
func (f *featureWorkload) sendAsyncLoop(ctx context.Context, p *equeue.Producer) {
	j := f.j
	inFlight := make(chan struct{}, 16)
	var results sync.WaitGroup
	defer results.Wait()
	for i := 0; ; i++ {
		select {
		case inFlight <- struct{}{}:
		case <-ctx.Done():
			return
		}
		v := fmt.Sprintf("sa-%d", i)
		op := jepsenOp{value: v, invoke: j.now()}
		// Not ctx: a send in flight when the run stops still gets its outcome.
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		fut := p.SendAsync(sctx, &equeue.Message{Topic: "jepsen", ID: v, Body: []byte(v)})
		results.Go(func() {
			defer func() {
				cancel()
				<-inFlight
			}()
			res, err := fut.Result(context.Background())
			op.done = j.now()
			op.setOutcome(err)
			op.queue, op.offset = res.Queue, res.Offset
			j.mu.Lock()
			j.ops = append(j.ops, op)
			j.mu.Unlock()
		})
		time.Sleep(5 * time.Millisecond)
	}
}

// sendCapped appends one message to the capped topic and records its
// outcome: ErrTopicFull is a refusal (nothing stored).
func (f *featureWorkload) sendCapped(ctx context.Context, value string, queue int) {
	op := f.j.appendOne(ctx, cappedTopic, queue, value, time.Time{})
	f.mu.Lock()
	f.capped = append(f.capped, op)
	f.mu.Unlock()
}

// sendDelayed appends one message due delayBy from now.
func (f *featureWorkload) sendDelayed(ctx context.Context, value string, queue int) {
	at := time.Now().Add(delayBy)
	f.mu.Lock()
	f.delays[value] = at
	f.mu.Unlock()
	op := f.j.appendOne(ctx, delayedTopic, queue, value, at)
	if op.outcome == opOK {
		f.delayAcked.Add(1)
	}
	f.mu.Lock()
	f.dOps[value] = op.outcome
	f.mu.Unlock()
}

// waitDelayed waits until more delayed sends are acknowledged than now.
func (f *featureWorkload) waitDelayed(more int64) {
	want := f.delayAcked.Load() + more
	eventually(f.j.t, 60*time.Second, func() error {
		if got := f.delayAcked.Load(); got < want {
			return fmt.Errorf("%d of %d delayed sends acknowledged", got, want)
		}
		return nil
	})
}

func (f *featureWorkload) stopProducers() {
	f.rq.waitAnswered(5) // requests are answered after the heal
	f.rq.close()
	f.stopProduce()
	f.producers.Wait()
}

// settle waits until every acknowledged message of "jepsen" is handled or
// has had its attempts, and every acknowledged delayed message came; then
// it closes the consumers.
func (f *featureWorkload) settle() {
	t := f.j.t
	var missing []string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		missing = append(f.unsettled(), f.rd.unhandled()...)
		if len(missing) == 0 {
			break
		}
	}
	assert.Empty(t, missing, "acknowledged messages not handled (after a redrive), not tried %d times, not delivered, or not received by a broadcasting member (member:value)", 2)
	for _, c := range f.consumers {
		closeConsumer(t, c)
	}
	f.rd.close()
}

func (f *featureWorkload) unsettled() []string {
	f.j.mu.Lock()
	defer f.j.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	var missing []string
	for _, op := range f.j.ops {
		if op.outcome != opOK {
			continue
		}
		if kindOf(op.value) == failAlways {
			if len(f.attempts[op.value]) < 2 {
				missing = append(missing, op.value)
			}
		} else if !f.handled[op.value] {
			missing = append(missing, op.value)
		}
		for id, got := range f.broadcast {
			if !got[op.value] {
				missing = append(missing, id+":"+op.value)
			}
		}
	}
	for v, o := range f.dOps {
		if o == opOK && !f.got[v] {
			missing = append(missing, v)
		}
	}
	slices.Sort(missing)
	return missing
}

// check reads the dead letters and the delayed topic from every stopped
// node and checks them against what was sent and handled.
func (f *featureWorkload) check() {
	t := f.j.t
	sent := map[string]jepsenOp{}
	for _, op := range f.j.ops {
		sent[op.value] = op
	}
	inDLQ := map[string]bool{}
	for _, vals := range f.j.readEveryNode(equeue.DLQTopic(retryGroup)) {
		for _, v := range vals {
			op, ok := sent[v]
			if !assert.True(t, ok, "dead letter %q was never sent", v) {
				continue
			}
			assert.NotEqual(t, opFailed, op.outcome, "dead letter %q was refused", v)
			assert.Equal(t, failAlways, kindOf(v), "%q dead-lettered; its attempts %v", v, f.attempts[v])
			inDLQ[v] = true
		}
	}
	lost, wrong := 0, 0
	for v, op := range sent {
		if op.outcome != opOK {
			continue
		}
		switch kindOf(v) {
		case failAlways:
			if !inDLQ[v] {
				lost++
				t.Errorf("%q failed %v attempts and is not dead-lettered", v, f.attempts[v])
			}
		case failOnce:
			if a := f.attempts[v]; len(a) < 2 || a[0] != 0 || !slices.Contains(a[1:], 1) {
				wrong++
				t.Errorf("%q failed once, then attempts %v", v, a)
			}
		}
	}
	assert.Zero(t, lost)
	assert.Zero(t, wrong)
	assert.Empty(t, f.early, "delayed messages delivered before their time")

	times := map[string]int{}
	for _, vals := range f.j.readEveryNode(delayedTopic) {
		for _, v := range vals {
			times[v]++
			o, ok := f.dOps[v]
			if assert.True(t, ok, "delayed %q was never sent", v) {
				assert.NotEqual(t, opFailed, o, "delayed %q was refused but is stored", v)
			}
		}
	}
	counts := map[outcome]int{}
	for v, o := range f.dOps {
		counts[o]++
		if o == opOK {
			assert.Equal(t, 1, times[v], "acknowledged delayed %q stored once", v)
		}
	}
	t.Logf("retries: %d dead letters; delayed sends: %d ok, %d failed, %d unknown, %d delivered",
		len(inDLQ), counts[opOK], counts[opFailed], counts[opUnknown], len(f.got))
	f.checkCapped()
	f.rd.check()
	async := map[outcome]int{}
	for _, op := range f.j.ops {
		if strings.HasPrefix(op.value, "sa-") {
			async[op.outcome]++
		}
	}
	t.Logf("SendAsync: %d ok, %d refused, %d unknown; broadcasting members received %d and %d values",
		async[opOK], async[opFailed], async[opUnknown], len(f.broadcast["b1"]), len(f.broadcast["b2"]))
}

// checkCapped checks the capped topic on every stopped node: never past
// its limit, every acknowledged send at its offset, no refused one.
func (f *featureWorkload) checkCapped() {
	t := f.j.t
	stored := f.j.readEveryNode(cappedTopic)
	byValue := map[string]jepsenOp{}
	counts := map[outcome]int{}
	for _, op := range f.capped {
		byValue[op.value] = op
		counts[op.outcome]++
	}
	n := 0
	for _, vals := range stored {
		n += len(vals)
		for _, v := range vals {
			op, ok := byValue[v]
			if assert.True(t, ok, "%q was never sent", v) {
				assert.NotEqual(t, opFailed, op.outcome, "%q was refused (%s) but is stored", v, op.err)
			}
		}
	}
	assert.LessOrEqual(t, n, cappedMax, "messages in the capped topic")
	for _, op := range f.capped {
		if op.outcome == opOK {
			q := stored[op.queue]
			assert.True(t, op.offset < int64(len(q)) && q[op.offset] == op.value, "acknowledged %q at %d/%d", op.value, op.queue, op.offset)
		}
	}
	t.Logf("capped topic: %d stored of %d; sends %d ok, %d refused, %d unknown", n, cappedMax, counts[opOK], counts[opFailed], counts[opUnknown])
}
