package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/internal/testport"
)

func TestMain(m *testing.M) {
	// sarama's metrics library (TestCluster_JepsenKafka) starts one
	// process-wide ticker that never stops.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"))
}

// testCluster is nodes in one process, on loopback.
type testCluster struct {
	t     testing.TB
	dirs  []string
	addrs []string // raft addresses, kept across restarts
	nodes []*cluster.Node
	mod   func(*cluster.Options)
}

func nodeOptions(id, raftAddr string) *cluster.Options {
	return &cluster.Options{
		ID: id, RaftAddr: raftAddr, ClientAddr: "client-" + id,
		HeartbeatTimeout: 500 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond,
		LeaderLeaseTimeout: 250 * time.Millisecond,
	}
}

// newCluster starts n nodes: the first bootstraps, the others are added.
func newCluster(t testing.TB, n int, mod func(*cluster.Options)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, mod: mod}
	base := t.TempDir()
	addrs := testport.Addrs(t, n) // below the ephemeral range: restarts listen on them again
	for i := range n {
		c.dirs = append(c.dirs, filepath.Join(base, fmt.Sprintf("n%d", i+1)))
		c.addrs = append(c.addrs, addrs[i])
		c.nodes = append(c.nodes, nil)
	}
	t.Cleanup(c.closeAll)
	c.start(0, true)
	c.waitLeader()
	for i := 1; i < n; i++ {
		c.start(i, false)
		c.addVoter(i)
	}
	return c
}

func (c *testCluster) id(i int) string { return fmt.Sprintf("n%d", i+1) }

func (c *testCluster) start(i int, bootstrap bool) {
	c.t.Helper()
	o := nodeOptions(c.id(i), c.addrs[i])
	o.Bootstrap = bootstrap
	if c.mod != nil {
		c.mod(o)
	}
	n, err := cluster.Open(c.dirs[i], o)
	require.NoError(c.t, err)
	c.nodes[i] = n
	c.addrs[i] = n.RaftAddr()
}

func (c *testCluster) addVoter(i int) {
	c.t.Helper()
	eventually(c.t, 20*time.Second, func() error {
		l := c.waitLeader()
		return l.AddVoter(context.Background(), c.id(i), c.addrs[i])
	})
}

// stop closes node i (in-process stand-in for a crash: nothing more is
// written by it).
func (c *testCluster) stop(i int) {
	c.t.Helper()
	require.NoError(c.t, c.nodes[i].Close())
	c.nodes[i] = nil
}

func (c *testCluster) closeAll() {
	for i, n := range c.nodes {
		if n != nil {
			if err := n.Close(); err != nil {
				c.t.Errorf("close %s: %v", c.id(i), err)
			}
			c.nodes[i] = nil
		}
	}
}

// waitLeader returns the node that serves an engine.
func (c *testCluster) waitLeader() *cluster.Node {
	c.t.Helper()
	var leader *cluster.Node
	eventually(c.t, 30*time.Second, func() error {
		for _, n := range c.nodes {
			if n != nil && n.Status().Serving {
				leader = n
				return nil
			}
		}
		return errors.New("no node serves")
	})
	return leader
}

// waitEngine returns the engine of the node that leads and holds its
// lease, other than not.
func (c *testCluster) waitEngine(not *equeue.Engine) *equeue.Engine {
	c.t.Helper()
	var engine *equeue.Engine
	eventually(c.t, 30*time.Second, func() error {
		for _, n := range c.nodes {
			if n == nil {
				continue
			}
			if e, err := n.Engine(); err == nil && e != not {
				engine = e
				return nil
			}
		}
		return errors.New("no node serves with its lease, or only the engine of the tenure that failed")
	})
	return engine
}

// onLeader calls f with the engine of the node that leads and holds its
// lease, across elections: a call refused (ErrNotLeader, or the engine
// closed: its tenure ended, as in an election or a lapse of the lease on
// a loaded machine) did nothing, and is made again with the engine of a
// later tenure. A call of unknown outcome (ErrIndeterminate: leadership
// lost while Raft committed it) is settled by took, which reports, as an
// engine of a later tenure holds it, whether the call made with failed
// took effect; it is made again only when it did not. took nil: the call
// may be made twice (a read, a write that sets what it sets), and is
// made again. Any other error ends the test, naming what.
func (c *testCluster) onLeader(t *testing.T, what string, f func(e *equeue.Engine) error, took func(failed *equeue.Engine) bool) {
	t.Helper()
	var ended *equeue.Engine // the engine whose tenure refused the call, or left it unknown
	for tenures := 0; ; tenures++ {
		require.Less(t, tenures, 100, "%s: not done by 100 leaders", what)
		e := c.waitEngine(ended)
		err := f(e)
		switch {
		case err == nil:
			return
		case errors.Is(err, equeue.ErrNotLeader), errors.Is(err, equeue.ErrClosed):
		case errors.Is(err, equeue.ErrIndeterminate):
			if took != nil && took(e) {
				return
			}
		default:
			require.NoError(t, err, what)
		}
		ended = e
	}
}

// onServing calls f with the node that serves, across elections: a call
// the node refused (ErrNotLeader: its tenure ended, or its lease lapsed)
// did nothing, and is made again on the node that serves then. Calls of
// unknown outcome are not made again: use it for reads and calls that
// change only the serving engine's memory. Any other error ends the test,
// naming what.
func (c *testCluster) onServing(t *testing.T, what string, f func(n *cluster.Node) error) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		err := f(c.waitLeader())
		if errors.Is(err, equeue.ErrNotLeader) {
			return fmt.Errorf("%s: %w", what, err)
		}
		require.NoError(t, err, what)
		return nil
	})
}

// sendBatch stores bodies as one batch at the end of queue of topic, on
// the leader's engine, across elections, as the only writer of the queue
// (onLeader). A batch of unknown outcome is settled by an engine of a
// later tenure, which opens on a store holding every entry of the earlier
// tenures the cluster will ever apply (startTenure): it was stored when
// the queue ends with its last body there, and is sent again otherwise.
// The engine is called, not Node.Append, to know which tenure took the
// batch; one that holds its lease is the newest.
func (c *testCluster) sendBatch(t *testing.T, topic string, queue int, bodies [][]byte) {
	t.Helper()
	ctx := context.Background()
	c.onLeader(t, fmt.Sprintf("append to %s/%d", topic, queue), func(e *equeue.Engine) error {
		msgs := make([]*equeue.Message, len(bodies))
		for i, b := range bodies {
			msgs[i] = &equeue.Message{Body: b}
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: topic, Queue: queue, Messages: msgs})
		return err
	}, func(failed *equeue.Engine) bool {
		return c.queueEndsWith(t, failed, topic, queue, bodies[len(bodies)-1])
	})
}

// createTopic creates topic name with queues queues, as createTopicWith.
func (c *testCluster) createTopic(t *testing.T, name string, queues int) {
	t.Helper()
	c.createTopicWith(t, name, equeue.TopicOptions{Queues: queues})
}

// createTopicWith creates topic name with o on the leader's engine,
// across elections (onLeader). A creation of unknown outcome took effect
// when an engine of a later tenure holds the topic; it is made again
// otherwise (made again after it took, it would fail: ErrTopicExists).
func (c *testCluster) createTopicWith(t *testing.T, name string, o equeue.TopicOptions) {
	t.Helper()
	ctx := context.Background()
	c.onLeader(t, "create "+name, func(e *equeue.Engine) error {
		return e.CreateTopicWith(ctx, name, o)
	}, func(failed *equeue.Engine) bool {
		return c.topicExists(t, failed, name)
	})
}

// topicExists reports whether topic name exists, as an engine other than
// failed holds it.
func (c *testCluster) topicExists(t *testing.T, failed *equeue.Engine, name string) bool {
	t.Helper()
	var exists bool
	eventually(t, 30*time.Second, func() error {
		_, err := c.waitEngine(failed).Topic(context.Background(), name)
		switch {
		case err == nil:
			exists = true
		case errors.Is(err, equeue.ErrTopicNotFound):
			exists = false
		default:
			return err // that engine's tenure ended too: ask the next one
		}
		return nil
	})
	return exists
}

// commitOffsets commits offsets for group on the leader's engine, across
// elections (onLeader); a commit sets what it sets, and one refused or of
// unknown outcome is made again.
func (c *testCluster) commitOffsets(t *testing.T, group string, offsets map[equeue.QueueRef]int64) {
	t.Helper()
	c.onLeader(t, "commit offsets of "+group, func(e *equeue.Engine) error {
		return e.CommitGroupOffsets(context.Background(), group, offsets)
	}, nil)
}

// queueEndsWith reports whether the last message of queue of topic has
// body, as an engine other than failed holds it.
func (c *testCluster) queueEndsWith(t *testing.T, failed *equeue.Engine, topic string, queue int, body []byte) bool {
	t.Helper()
	ctx := context.Background()
	var ends bool
	eventually(t, 30*time.Second, func() error {
		e := c.waitEngine(failed)
		info, err := e.Topic(ctx, topic)
		if err != nil {
			return err
		}
		end := info.Queues[queue].MaxOffset
		if end == 0 {
			ends = false
			return nil
		}
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: queue, Offset: end - 1, Max: 1})
		if err != nil {
			return err
		}
		if len(res.Messages) != 1 {
			return fmt.Errorf("%s/%d: no message at %d, one before its end", topic, queue, end-1)
		}
		ends = bytes.Equal(res.Messages[0].Body, body)
		return nil
	})
	return ends
}

// lead makes node i the serving leader, handing the leadership over to
// it when another node leads.
func (c *testCluster) lead(i int) {
	c.t.Helper()
	eventually(c.t, 30*time.Second, func() error {
		l := c.waitLeader()
		if l == c.nodes[i] {
			return nil
		}
		if err := l.TransferLeadership(context.Background(), c.id(i)); err != nil {
			return fmt.Errorf("hand the leadership over to %s: %w", c.id(i), err)
		}
		return fmt.Errorf("%s does not lead", c.id(i))
	})
}

// handOver makes node i the serving leader, as lead does, taking only an
// election's answers for a reason to ask again: the node asked stopped
// leading meanwhile (ErrNotLeader), another transfer was under way
// (raft.ErrLeadershipTransferInProgress), or the target did not win
// within the election timeout (Raft's "leadership transfer timeout").
// Any other error ends the test.
func (c *testCluster) handOver(t *testing.T, i int) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		l := c.waitLeader()
		if l == c.nodes[i] {
			return nil
		}
		err := l.TransferLeadership(context.Background(), c.id(i))
		if err == nil || errors.Is(err, equeue.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipTransferInProgress) ||
			strings.Contains(err.Error(), "leadership transfer timeout") {
			return fmt.Errorf("%s does not lead (hand-over from %s: %v)", c.id(i), l.ID(), err)
		}
		require.NoError(t, err, "hand the leadership over from %s to %s", l.ID(), c.id(i))
		return nil
	})
}

func (c *testCluster) leaderIndex() int {
	l := c.waitLeader()
	for i, n := range c.nodes {
		if n == l {
			return i
		}
	}
	return -1
}

// waitConverged waits until every running node applied the same last index.
func (c *testCluster) waitConverged() {
	c.t.Helper()
	// A write whose caller gave up (an unknown outcome) may still be on its
	// way into the leader's log: converged means the log stopped growing
	// for a while and every node applied all of it.
	var last uint64
	var stableSince time.Time
	eventually(c.t, 30*time.Second, func() error {
		var want uint64
		for _, n := range c.nodes {
			if n != nil && n.Status().Serving {
				want = n.Status().LastLogIndex
			}
		}
		if want == 0 {
			return errors.New("no leader")
		}
		if want != last {
			last, stableSince = want, time.Now()
		}
		if time.Since(stableSince) < 500*time.Millisecond {
			return fmt.Errorf("the leader's log still grows (%d)", want)
		}
		for i, n := range c.nodes {
			if n == nil {
				continue
			}
			if got := n.Status().AppliedIndex; got != want {
				return fmt.Errorf("%s applied %d, leader's log ends at %d", c.id(i), got, want)
			}
		}
		return nil
	})
}

// eventually retries f until it succeeds or the deadline passes.
func eventually(t testing.TB, within time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %v", within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eachStored opens the engine directory of a closed node as a plain engine
// and calls f with every message of each queue of topic, in offset order.
func eachStored(t testing.TB, dir, topic string, f func(q int, m *equeue.Message)) {
	t.Helper()
	e, err := equeue.Open(filepath.Join(dir, "engine"), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx := context.Background()
	info, err := e.Topic(ctx, topic)
	require.NoError(t, err)
	for q := range info.Queues {
		for off := int64(0); ; {
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: q, Offset: off, Max: equeue.MaxPullBatch})
			require.NoError(t, err)
			for _, m := range res.Messages {
				f(q, m)
			}
			if len(res.Messages) == 0 {
				break
			}
			off = res.NextOffset
		}
	}
}

// readAll returns every message body of each queue of topic in a closed
// node's engine, by offset (dense from 0).
func readAll(t testing.TB, dir, topic string) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	eachStored(t, dir, topic, func(q int, m *equeue.Message) {
		require.Equal(t, int64(len(out[q])), m.Offset, "offsets of %s/%d dense from 0", topic, q)
		out[q] = append(out[q], string(m.Body))
	})
	return out
}

// describeCopies lists the messages whose body is value in topic of a
// closed node's engine: queue, offset, ID and times.
func describeCopies(t testing.TB, dir, topic, value string) string {
	t.Helper()
	var out []string
	eachStored(t, dir, topic, func(q int, m *equeue.Message) {
		if string(m.Body) == value {
			out = append(out, fmt.Sprintf("%d/%d id %s born %s stored %s", q, m.Offset, m.ID, m.BornAt.Format("15:04:05.000"), m.StoredAt.Format("15:04:05.000")))
		}
	})
	return strings.Join(out, "; ")
}

// readFrom opens the engine directory of a closed node as a plain engine
// and returns one queue's low watermark and the bodies from there on.
func readFrom(t testing.TB, dir, topic string, queue int) (int64, []string) {
	t.Helper()
	e, err := equeue.Open(filepath.Join(dir, "engine"), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx := context.Background()
	info, err := e.Topic(ctx, topic)
	require.NoError(t, err)
	first := info.Queues[queue].MinOffset
	var bodies []string
	for off := first; ; {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: queue, Offset: off, Max: equeue.MaxPullBatch})
		require.NoError(t, err)
		if len(res.Messages) == 0 {
			return first, bodies
		}
		for _, m := range res.Messages {
			bodies = append(bodies, string(m.Body))
		}
		off = res.NextOffset
	}
}
