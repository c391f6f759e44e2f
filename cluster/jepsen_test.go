package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/testport"
	"github.com/equeue-go/equeue/remote"
)

// TestCluster_Jepsen runs three nodes as OS processes on loopback while
// producers send unique values and a nemesis kills (SIGKILL) or pauses
// (SIGSTOP, later SIGCONT) the leader and restarts killed nodes, or cuts
// the leader's Raft links to the others (clients still reach it) and heals
// them; then it heals the cluster, drains every queue of every node and
// checks the history (see check). EQUEUE_CLUSTER_LONG=1 runs 30 nemesis
// rounds instead of 3 (one of each). A failed run prints what each node
// logged of note; EQUEUE_CLUSTER_KEEP_LOGS=dir also copies the whole logs
// there.
func TestCluster_Jepsen(t *testing.T) { runJepsen(t, jepsenConfig{}) }

// runJepsen runs three node processes through the nemesis with cfg's
// workload: 3 rounds, or 30 with EQUEUE_CLUSTER_LONG set, or
// EQUEUE_CLUSTER_ROUNDS; EQUEUE_CLUSTER_NEMESIS names the kinds of round
// to cycle through (kill, pause, cut; default all three, in that order).
func runJepsen(t *testing.T, cfg jepsenConfig) {
	needPauseSignals(t)
	if testing.Short() {
		t.Skip("multi-process test")
	}
	rounds := 3
	if os.Getenv("EQUEUE_CLUSTER_LONG") != "" {
		rounds = 30
	}
	if v := os.Getenv("EQUEUE_CLUSTER_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "EQUEUE_CLUSTER_ROUNDS")
		rounds = n
	}
	j := startJepsen(t, 3, cfg)
	if v := os.Getenv("EQUEUE_CLUSTER_NEMESIS"); v != "" {
		j.kinds = nil
		for _, k := range strings.Split(v, ",") {
			i := slices.Index(nemesisKinds, strings.TrimSpace(k))
			require.GreaterOrEqual(t, i, 0, "EQUEUE_CLUSTER_NEMESIS: unknown kind %q (kinds: %v)", k, nemesisKinds)
			j.kinds = append(j.kinds, i)
		}
	}
	j.run(rounds)
}

// nemesisKinds are the kinds of nemesis round, by their number in run.
var nemesisKinds = []string{"kill", "pause", "cut"}

// proc is one node process.
type proc struct {
	id, dir, client string
	kafka           string // its Kafka listener's address, if it serves one
	raft            string // its Raft address
	cutFile         string // the Raft addresses its links are cut to
	cmd             *exec.Cmd
	done            chan struct{}
	paused          bool
}

type jepsen struct {
	t     testing.TB
	procs []*proc
	peers string
	cfg   jepsenConfig
	kinds []int // the nemesis rounds to cycle through (nemesisKinds)
	cc    *remote.ClusterClient
	start time.Time

	mu       sync.Mutex
	ops      []jepsenOp // topic "jepsen"
	linOps   []linOp    // topic "lin", for porcupine
	commits  map[int][]int64
	nemesis  []string
	failover []time.Duration
}

// jepsenOp is one send: its value, queue, and outcome.
type jepsenOp struct {
	value        string
	queue        int
	invoke, done time.Duration
	outcome      outcome
	offset       int64
	err          string
}

type outcome int

const (
	opOK      outcome = iota // acknowledged at (queue, offset)
	opFailed                 // refused: nothing stored
	opUnknown                // may or may not be stored
)

// jepsenConfig varies the nodes and the workload.
type jepsenConfig struct {
	env []string // extra environment of the node processes
	// kafka makes every node serve Kafka clients too, and adds Kafka
	// producers and consumer groups to the workload (jepsen_kafka_test.go).
	kafka bool
	// features adds a consumer group whose handler fails some messages
	// (retries, dead letters), delayed sends, a capped topic and dead
	// letters redriven (jepsen_features_test.go).
	features bool
}

func startJepsen(t testing.TB, n int, cfg jepsenConfig) *jepsen {
	j := &jepsen{t: t, start: time.Now(), commits: map[int][]int64{}, cfg: cfg, kinds: []int{0, 1, 2}}
	addrs := testport.Addrs(t, 3*n)
	base := t.TempDir()
	var peers []string
	var clients []string
	for i := range n {
		p := &proc{id: fmt.Sprintf("n%d", i+1), dir: filepath.Join(base, fmt.Sprintf("n%d", i+1)), client: addrs[n+i], raft: addrs[i]}
		p.cutFile = p.dir + ".cut"
		if cfg.kafka {
			p.kafka = addrs[2*n+i]
		}
		j.procs = append(j.procs, p)
		peers = append(peers, p.id+"="+addrs[i]+"="+p.client)
		clients = append(clients, p.client)
	}
	j.peers = strings.Join(peers, ",")
	t.Cleanup(func() {
		if t.Failed() {
			j.dumpLogs()
		}
	})
	t.Cleanup(func() {
		for _, p := range j.procs {
			if p.cmd != nil {
				_ = p.cmd.Process.Signal(sigResume)
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
	})
	for _, p := range j.procs {
		j.launch(p)
	}
	cc, err := remote.DialCluster(clients, nil)
	require.NoError(t, err)
	j.cc = cc
	t.Cleanup(func() { _ = cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A Kafka producer's retry of a batch whose answer a failover lost is
	// stored once only on a topic with a dedup window (README).
	var dedup time.Duration
	if cfg.kafka {
		dedup = time.Hour
	}
	for _, topic := range []struct {
		name   string
		queues int
		limits equeue.TopicLimits
	}{
		{name: "jepsen", queues: 4}, {name: "lin", queues: 1}, {name: delayedTopic, queues: 2}, {name: redriveTopic, queues: 2}, {name: requestTopic, queues: 2},
		{name: cappedTopic, queues: 2, limits: equeue.TopicLimits{MaxMessages: cappedMax, Overflow: equeue.OverflowReject}},
	} {
		require.NoError(t, cc.OnLeader(ctx, func(c *remote.Client) error {
			err := c.CreateTopicWith(ctx, topic.name, equeue.TopicOptions{Queues: topic.queues, DedupWindow: dedup, Limits: topic.limits})
			if errors.Is(err, equeue.ErrTopicExists) {
				return nil
			}
			return err
		}))
	}
	return j
}

func (j *jepsen) launch(p *proc) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestClusterChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+p.id, childDir+"="+p.dir, childPeers+"="+j.peers, childCut+"="+p.cutFile)
	if p.kafka != "" {
		cmd.Env = append(cmd.Env, childKafka+"="+p.kafka)
	}
	cmd.Env = append(cmd.Env, j.cfg.env...)
	logf, err := os.OpenFile(p.dir+".log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(j.t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(j.t, cmd.Start())
	p.cmd, p.done, p.paused = cmd, make(chan struct{}), false
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
}

func (j *jepsen) now() time.Duration { return time.Since(j.start) }

func (j *jepsen) note(format string, args ...any) {
	j.mu.Lock()
	j.nemesis = append(j.nemesis, fmt.Sprintf("%8.3fs ", j.now().Seconds())+fmt.Sprintf(format, args...))
	j.mu.Unlock()
}

// leader asks every running, unpaused node who leads: the one that does
// not refuse a call.
func (j *jepsen) leader() *proc {
	for _, p := range j.procs {
		if p.cmd == nil || p.paused {
			continue
		}
		c, err := remote.Dial(p.client, nil)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err = c.Route(ctx, "jepsen")
		cancel()
		_ = c.Close()
		if err == nil {
			return p
		}
	}
	return nil
}

func (j *jepsen) waitLeader(not *proc) *proc {
	var l *proc
	eventually(j.t, 60*time.Second, func() error {
		if l = j.leader(); l == nil || l == not {
			return errors.New("no leader")
		}
		return nil
	})
	return l
}

// send appends one value and records its outcome.
func (j *jepsen) send(ctx context.Context, value string, queue int) {
	op := j.appendOne(ctx, "jepsen", queue, value, time.Time{})
	j.mu.Lock()
	j.ops = append(j.ops, op)
	j.mu.Unlock()
}

func (j *jepsen) acked() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, op := range j.ops {
		if op.outcome == opOK {
			n++
		}
	}
	return n
}

// waitProgress waits until more sends are acknowledged than now.
func (j *jepsen) waitProgress(more int) time.Duration {
	start := time.Now()
	want := j.acked() + more
	eventually(j.t, 60*time.Second, func() error {
		if got := j.acked(); got < want {
			return fmt.Errorf("%d of %d acknowledged", got, want)
		}
		return nil
	})
	return time.Since(start)
}

func (j *jepsen) run(rounds int) {
	t := j.t
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				j.send(ctx, fmt.Sprintf("w%d-%d", w, i), (w+i)%4)
			}
		})
	}
	for c := range 2 {
		wg.Go(func() { j.linClient(ctx, c) })
	}
	wg.Go(func() { j.consumeAndSampleCommits(ctx) })
	var k *kafkaWorkload
	if j.cfg.kafka {
		k = j.startKafka()
	}
	var f *featureWorkload
	if j.cfg.features {
		f = j.startFeatures()
	}

	j.waitProgress(100)
	for r := range rounds {
		l := j.waitLeader(nil)
		switch j.kinds[r%len(j.kinds)] {
		case 0:
			j.note("SIGKILL leader %s", l.id)
			killed := time.Now()
			require.NoError(t, l.cmd.Process.Kill())
			<-l.done
			l.cmd = nil
			j.waitProgress(1)
			j.mu.Lock()
			j.failover = append(j.failover, time.Since(killed))
			j.mu.Unlock()
			j.waitProgress(50)
			j.note("restart %s", l.id)
			j.launch(l)
		case 1:
			j.note("SIGSTOP leader %s", l.id)
			require.NoError(t, l.cmd.Process.Signal(sigPause))
			l.paused = true
			j.waitLeader(l)
			j.waitProgress(50)
			j.note("SIGCONT %s", l.id)
			require.NoError(t, l.cmd.Process.Signal(sigResume))
			l.paused = false
			if r+1 < rounds && j.kinds[(r+1)%len(j.kinds)] == 2 {
				// The partition round follows at once: the woken node may
				// still believe it leads while the client fails over to it
				// (cluster/lease.go).
				continue
			}
		case 2:
			j.note("cut leader %s off from the others", l.id)
			j.partition(l)
			j.waitLeader(l)
			j.waitProgress(50)
			j.note("heal the partition")
			j.partition(nil)
		}
		j.waitProgress(50)
	}
	j.note("heal")
	j.waitLeader(nil)
	j.waitProgress(20)
	if k != nil {
		k.waitProduced(20)
		k.stopProducers()
	}
	if f != nil {
		f.waitDelayed(20)
		f.stopProducers()
	}
	stop()
	wg.Wait()
	j.freshGroupGetsEverything()
	if k != nil {
		k.groupsGetEverything()
	}
	if f != nil {
		f.settle()
	}
	time.Sleep(time.Second) // let heartbeats carry the final commit index
	j.stopAll()
	j.check()
	if f != nil {
		f.check()
	}
}

// stopAll stops every node gracefully (SIGTERM); each applies what is
// committed before it exits.
func (j *jepsen) stopAll() {
	for _, p := range j.procs {
		require.NotNil(j.t, p.cmd)
		require.NoError(j.t, p.cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, p := range j.procs {
		select {
		case <-p.done:
		case <-time.After(60 * time.Second):
			j.t.Fatalf("%s did not stop", p.id)
		}
		assert.True(j.t, p.cmd.ProcessState.Success(), "%s exited with %v (see %s.log)", p.id, p.cmd.ProcessState, p.dir)
		p.cmd = nil
	}
}

// partition cuts the Raft links between iso and every other node (both
// ends cut, see cutNet); nil heals every link. Clients still reach iso.
func (j *jepsen) partition(iso *proc) {
	for _, p := range j.procs {
		var cut []string
		switch {
		case iso == nil:
		case p == iso:
			for _, o := range j.procs {
				if o != iso {
					cut = append(cut, o.raft)
				}
			}
		default:
			cut = []string{iso.raft}
		}
		require.NoError(j.t, os.WriteFile(p.cutFile+".tmp", []byte(strings.Join(cut, ",")), 0o644))
		require.NoError(j.t, os.Rename(p.cutFile+".tmp", p.cutFile))
	}
}

// dumpLogs prints the notable lines of every node's log (state changes,
// warnings and errors), so that a failed run says what the nodes did.
func (j *jepsen) dumpLogs() {
	for _, p := range j.procs {
		b, err := os.ReadFile(p.dir + ".log")
		if err != nil {
			j.t.Logf("%s: no log: %v", p.id, err)
			continue
		}
		var keep []string
		for _, line := range strings.Split(string(b), "\n") {
			if notableLogLine(line) {
				keep = append(keep, line)
			}
		}
		if len(keep) > 200 {
			keep = append([]string{fmt.Sprintf("(%d lines before)", len(keep)-200)}, keep[len(keep)-200:]...)
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		tail := lines[max(0, len(lines)-30):]
		j.t.Logf("%s log:\n%s\n-- its last lines:\n%s", p.id, strings.Join(keep, "\n"), strings.Join(tail, "\n"))
		if keepDir := os.Getenv("EQUEUE_CLUSTER_KEEP_LOGS"); keepDir != "" {
			dst := filepath.Join(keepDir, fmt.Sprintf("%s-%d.log", p.id, time.Now().UnixNano()))
			if err := os.WriteFile(dst, b, 0o644); err == nil {
				j.t.Logf("%s log kept as %s", p.id, dst)
			}
		}
	}
}

func notableLogLine(line string) bool {
	for _, s := range []string{"partition nemesis", "connection refused", "use of closed network connection", "failed to heartbeat"} {
		if strings.Contains(line, s) {
			return false // the nemesis's own noise
		}
	}
	for _, s := range []string{"level=WARN", "level=ERROR", "[WARN]", "[ERROR]", "entering", "election won", "serving as leader", "stopped serving", "snapshot", "panic", "fatal", "DATA RACE", "goleak"} {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}
