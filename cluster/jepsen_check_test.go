package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// linOp is one operation on the single queue of topic "lin": an append
// (value; offset when acknowledged) or a read of one offset.
type linOp struct {
	client   int
	append   bool
	value    string
	offset   int64
	found    bool // read: a message was at offset
	unknown  bool // append: outcome unknown
	call, rt int64
}

// linClient alternates appends and reads of random offsets on "lin".
func (j *jepsen) linClient(ctx context.Context, client int) {
	var maxSeen int64
	for i := 0; i < 60 && ctx.Err() == nil; i++ {
		op := linOp{client: client, append: i%2 == 0, call: int64(j.now())}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if op.append {
			op.value = fmt.Sprintf("l%d-%d", client, i)
			res, err := j.cc.Append(cctx, &equeue.AppendRequest{Topic: "lin", Messages: []*equeue.Message{{Body: []byte(op.value)}}})
			switch {
			case err == nil:
				op.offset = res.FirstOffset
				maxSeen = max(maxSeen, op.offset)
			case isRefusal(err):
				cancel()
				continue // nothing stored: not part of the history
			default:
				op.unknown = true
			}
		} else {
			op.offset = rand.Int64N(maxSeen + 3)
			res, err := j.cc.Pull(cctx, &equeue.PullRequest{Topic: "lin", Offset: op.offset, Max: 1})
			if err != nil {
				cancel()
				continue // a failed read tells nothing
			}
			if len(res.Messages) == 1 && res.Messages[0].Offset == op.offset {
				op.found, op.value = true, string(res.Messages[0].Body)
			}
		}
		cancel()
		op.rt = int64(j.now())
		if op.unknown {
			op.rt = math.MaxInt64 // may take effect any time after its call
		}
		j.mu.Lock()
		j.linOps = append(j.linOps, op)
		j.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// isRefusal reports an error that says nothing was stored: not the
// leader, or a full topic (OverflowReject), and not an unknown outcome.
func isRefusal(err error) bool {
	return (errors.Is(err, equeue.ErrNotLeader) || errors.Is(err, equeue.ErrTopicFull)) &&
		!errors.Is(err, equeue.ErrIndeterminate)
}

// setOutcome records what err says of op: acknowledged (nil; the caller
// sets where), refused (nothing stored) or unknown.
func (op *jepsenOp) setOutcome(err error) {
	switch {
	case err == nil:
		op.outcome = opOK
	case isRefusal(err):
		op.outcome, op.err = opFailed, err.Error()
	default:
		op.outcome, op.err = opUnknown, err.Error()
	}
}

// appendOne appends one message (value as its ID and body, due at
// deliverAt when not zero) to topic's queue and returns the operation
// with its outcome.
func (j *jepsen) appendOne(ctx context.Context, topic string, queue int, value string, deliverAt time.Time) jepsenOp {
	op := jepsenOp{value: value, queue: queue, invoke: j.now()}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	res, err := j.cc.Append(cctx, &equeue.AppendRequest{Topic: topic, Queue: queue,
		Messages: []*equeue.Message{{ID: value, Body: []byte(value), DeliverAt: deliverAt}}})
	cancel()
	op.done = j.now()
	op.setOutcome(err)
	op.offset = res.FirstOffset
	return op
}

// readEveryNode reads topic from every stopped node, checks that they all
// store the same, and returns node 1's queues.
func (j *jepsen) readEveryNode(topic string) map[int][]string {
	first := readAll(j.t, j.procs[0].dir, topic)
	for i, p := range j.procs[1:] {
		assert.Equal(j.t, first, readAll(j.t, p.dir, topic), "node %d stores %s as node 1", i+2, topic)
	}
	return first
}

// consumeAndSampleCommits runs a consumer group on "jepsen" and samples
// its committed offsets until ctx ends.
func (j *jepsen) consumeAndSampleCommits(ctx context.Context) {
	cons, err := equeue.NewConsumer(j.cc, equeue.ConsumerOptions{
		Group: "g1", Subscriptions: []equeue.Subscription{{Topic: "jepsen"}},
		HeartbeatInterval: 200 * time.Millisecond, CommitInterval: 100 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error { return nil },
	})
	require.NoError(j.t, err)
	require.NoError(j.t, cons.Start(context.Background()))
	defer func() { closeConsumer(j.t, cons) }()
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_ = j.cc.OnLeader(cctx, func(c *remote.Client) error {
			g, err := c.Group(cctx, "g1")
			if err != nil {
				return err
			}
			j.mu.Lock()
			for _, q := range g.Queues {
				if q.Topic == "jepsen" && q.Committed >= 0 {
					j.commits[q.Queue] = append(j.commits[q.Queue], q.Committed)
				}
			}
			j.mu.Unlock()
			return nil
		})
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// closeConsumer closes c. A member that has not rejoined the leader
// since the last failover cannot store its final commit (ErrNotMember):
// what it handled since its last stored commit will be delivered again.
func closeConsumer(t testing.TB, c *equeue.Consumer) {
	if err := c.Close(); err != nil && !errors.Is(err, equeue.ErrNotMember) {
		t.Errorf("close consumer: %v", err)
	}
}

// freshGroupGetsEverything starts a new group after the heal and waits
// until it received every acknowledged value.
func (j *jepsen) freshGroupGetsEverything() {
	var mu sync.Mutex
	got := map[string]bool{}
	cons, err := equeue.NewConsumer(j.cc, equeue.ConsumerOptions{
		Group: "fresh", Subscriptions: []equeue.Subscription{{Topic: "jepsen"}},
		Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			got[string(m.Body)] = true
			mu.Unlock()
			return nil
		},
	})
	require.NoError(j.t, err)
	require.NoError(j.t, cons.Start(context.Background()))
	defer func() { closeConsumer(j.t, cons) }()
	// Not fatal: the checks of the stored history that follow say more.
	missing := 0
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		missing = 0
		for _, op := range j.ops {
			if op.outcome == opOK && !got[op.value] {
				missing++
			}
		}
		mu.Unlock()
		if missing == 0 {
			break
		}
	}
	assert.Zero(j.t, missing, "acknowledged messages a fresh group did not receive")
}

// check drains every queue of every node and checks the history.
func (j *jepsen) check() {
	t := j.t
	var stored, lin []map[int][]string
	for _, p := range j.procs {
		stored = append(stored, readAll(t, p.dir, "jepsen"))
		lin = append(lin, readAll(t, p.dir, "lin"))
	}
	counts := map[outcome]int{}
	for _, op := range j.ops {
		counts[op.outcome]++
	}
	t.Logf("sends: %d ok, %d failed, %d unknown; lin ops %d", counts[opOK], counts[opFailed], counts[opUnknown], len(j.linOps))
	t.Logf("nemesis:\n%s", strings.Join(j.nemesis, "\n"))
	if len(j.failover) > 0 {
		fo := slices.Clone(j.failover)
		slices.Sort(fo)
		t.Logf("leader SIGKILL to first acknowledged send: p50 %v, max %v over %d kills", fo[len(fo)/2], fo[len(fo)-1], len(fo))
	}

	// Offsets dense (readAll) and identical across nodes.
	for i := 1; i < len(stored); i++ {
		assert.Equal(t, stored[0], stored[i], "node %d stores the queues of node 1", i+1)
		assert.Equal(t, lin[0], lin[i], "node %d stores lin as node 1", i+1)
	}
	byValue := map[string]jepsenOp{}
	for _, op := range j.ops {
		byValue[op.value] = op
	}
	where := map[string]int{}
	for q, vals := range stored[0] {
		for off, v := range vals {
			where[v]++
			op, sent := byValue[v]
			if !assert.True(t, sent, "%s/%d@%d: %q was never sent", "jepsen", q, off, v) {
				continue
			}
			assert.NotEqual(t, opFailed, op.outcome, "%q was refused (%s) but is stored", v, op.err)
		}
	}
	for v, k := range where {
		if !assert.Equal(t, 1, k, "%q stored once", v) {
			op := byValue[v]
			t.Logf("%q: outcome %d (%s), sent %v–%v; its copies: %s", v, op.outcome, op.err,
				op.invoke, op.done, describeCopies(t, j.procs[0].dir, "jepsen", v))
		}
	}
	lost := 0
	for _, op := range j.ops {
		if op.outcome != opOK {
			continue
		}
		for i, s := range stored {
			q := s[op.queue]
			if op.offset >= int64(len(q)) || q[op.offset] != op.value {
				lost++
				t.Errorf("node %d: acknowledged %q at %d/%d missing", i+1, op.value, op.queue, op.offset)
			}
		}
	}
	assert.Zero(t, lost)
	for q, cs := range j.commits {
		for i := 1; i < len(cs); i++ {
			assert.GreaterOrEqual(t, cs[i], cs[i-1], "committed offset of g1 on queue %d went back", q)
		}
	}
	j.checkLinearizable()
}

// linModel is one queue: the values at offsets 0..n-1. An append of
// unknown outcome may or may not have happened.
var linModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		s := state.(string)
		var vals []string
		if s != "" {
			vals = strings.Split(s, ",")
		}
		op := input.(linOp)
		switch {
		case op.append && op.unknown:
			return []any{s, strings.Join(append(vals, op.value), ",")}
		case op.append:
			if op.offset == int64(len(vals)) {
				return []any{strings.Join(append(vals, op.value), ",")}
			}
			return nil
		case op.found:
			if op.offset < int64(len(vals)) && vals[op.offset] == op.value {
				return []any{s}
			}
			return nil
		default:
			if op.offset >= int64(len(vals)) {
				return []any{s}
			}
			return nil
		}
	},
	Equal: func(a, b any) bool { return a.(string) == b.(string) },
	Hash: func(s any) uint64 {
		h := fnv.New64a()
		_, _ = h.Write([]byte(s.(string)))
		return h.Sum64()
	},
	DescribeOperation: func(input, _ any) string {
		op := input.(linOp)
		if op.append {
			return fmt.Sprintf("append(%s) -> %d unknown=%v", op.value, op.offset, op.unknown)
		}
		return fmt.Sprintf("read(%d) -> %q found=%v", op.offset, op.value, op.found)
	},
}

func (j *jepsen) checkLinearizable() {
	ops := make([]porcupine.Operation, 0, len(j.linOps))
	sort.Slice(j.linOps, func(a, b int) bool { return j.linOps[a].call < j.linOps[b].call })
	for _, op := range j.linOps {
		ops = append(ops, porcupine.Operation{ClientId: op.client, Input: op, Call: op.call, Output: nil, Return: op.rt})
	}
	res := porcupine.CheckOperationsTimeout(linModel.ToModel(), ops, 60*time.Second)
	assert.NotEqual(j.t, porcupine.Illegal, res, "history of lin is not linearizable")
	j.t.Logf("porcupine: %s over %d operations", res, len(ops))
}
