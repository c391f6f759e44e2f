package remote_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/testport"
	"github.com/equeue-go/equeue/remote"
)

// The multi-process test runs this test binary as separate OS processes on
// 127.0.0.1: one broker, two producers and three consumers of one group.

const mpRoleEnv = "EQUEUE_MP_ROLE"

// TestMultiProcessChild is a child's workload; it does nothing unless
// started by TestMultiProcess_BrokerProducersConsumers.
func TestMultiProcessChild(t *testing.T) {
	role := os.Getenv(mpRoleEnv)
	if role == "" {
		t.Skip("child process of TestMultiProcess_BrokerProducersConsumers")
	}
	addr, name := os.Getenv("EQUEUE_MP_ADDR"), os.Getenv("EQUEUE_MP_NAME")
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		_, _ = fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	ctx := context.Background()
	switch role {
	case "broker", "bench-broker":
		opts := &equeue.Options{SessionTimeout: time.Second}
		if role == "bench-broker" {
			opts = &equeue.Options{InMemory: os.Getenv("EQUEUE_MP_DIR") == ""} // else defaults throughout
			usr1 := make(chan os.Signal, 1)
			signal.Notify(usr1, sigGoroutines)
			go func() {
				for range usr1 {
					say("GOROUTINES %d", runtime.NumGoroutine())
				}
			}()
			profileOnSignal(os.Getenv(benchProfileEnv))
		}
		e, err := equeue.Open(os.Getenv("EQUEUE_MP_DIR"), opts)
		if err != nil {
			say("ERROR %v", err)
			os.Exit(3)
		}
		if role == "broker" {
			_ = e.CreateTopic(ctx, "t", 6)
		}
		srv, err := remote.NewServer(e, nil)
		if err != nil {
			say("ERROR %v", err)
			os.Exit(3)
		}
		var lis net.Listener
		for i := 0; ; i++ { // the previous broker's port may take a moment to free
			if lis, err = net.Listen("tcp", addr); err == nil || i > 100 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			say("ERROR %v", err)
			os.Exit(3)
		}
		go func() {
			<-term
			srv.GracefulStop()
		}()
		say("READY")
		_ = srv.Serve(lis)
		_ = e.Close()
		os.Exit(0)
	case "producer":
		c, err := remote.Dial(addr, nil)
		if err != nil {
			say("ERROR %v", err)
			os.Exit(3)
		}
		p, _ := equeue.NewProducer(c, nil)
		n, _ := strconv.Atoi(os.Getenv("EQUEUE_MP_COUNT"))
		say("READY")
		for i := 0; i < n; i++ {
			select {
			case <-term: // told to finish: the messages so far are all it sends
				n = i
				continue
			default:
			}
			id := fmt.Sprintf("%s-%d", name, i)
			for {
				sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := p.Send(sctx, &equeue.Message{Topic: "t", ID: id, Keys: []string{strconv.Itoa(i % 11)}, Body: []byte(id)})
				cancel()
				if err == nil {
					break
				}
				say("SENDERR %s %v", id, err)     // the parent reports the last one
				time.Sleep(50 * time.Millisecond) // broker down: retry the same message
			}
			say("ACK %s", id)
			time.Sleep(time.Millisecond)
		}
		say("DONE")
		_ = c.Close()
		os.Exit(0)
	case "bench-consumers":
		runBenchConsumers(addr, say, term)
		os.Exit(0)
	case "cost-holders":
		runCostHolders(addr, say)
	case "consumer":
		c, err := remote.Dial(addr, nil)
		if err != nil {
			say("ERROR %v", err)
			os.Exit(3)
		}
		cons, err := equeue.NewConsumer(c, equeue.ConsumerOptions{Group: "g", ID: name, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			From: equeue.ConsumeFromEarliest, HeartbeatInterval: 200 * time.Millisecond, CommitInterval: 100 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(lineWriter(func(l string) { say("LOG %s", l) }), nil)),
			Handler: func(_ context.Context, m *equeue.Message) error {
				say("HANDLED %s", m.ID)
				return nil
			}})
		if err == nil {
			err = cons.Start(ctx)
		}
		if err != nil {
			say("ERROR %v", err)
			os.Exit(3)
		}
		say("READY")
		<-term
		_ = cons.Close()
		_ = c.Close()
		os.Exit(0)
	}
}

// lineWriter passes each line written to it to f (slog writes one line
// per call).
type lineWriter func(string)

func (w lineWriter) Write(p []byte) (int, error) {
	w(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// mpChild is a running child process and what it printed.
type mpChild struct {
	name     string
	cmd      *exec.Cmd
	ready    chan struct{}
	done     chan struct{} // closed when its output ends
	mu       sync.Mutex
	lines    []string
	lastAck  time.Time // when the last ACK line arrived
	ackTimes []time.Time
}

func startChild(t testing.TB, role, name string, env ...string) *mpChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestMultiProcessChild$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), mpRoleEnv+"="+role, "EQUEUE_MP_NAME="+name), env...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = io.Discard
	require.NoError(t, cmd.Start())
	c := &mpChild{name: name, cmd: cmd, ready: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(out)
		var once sync.Once
		for sc.Scan() {
			l := sc.Text()
			if l == "READY" {
				once.Do(func() { close(c.ready) })
			}
			c.mu.Lock()
			c.lines = append(c.lines, l)
			if strings.HasPrefix(l, "ACK ") {
				c.lastAck = time.Now()
				c.ackTimes = append(c.ackTimes, c.lastAck)
			}
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	select {
	case <-c.ready:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s never became ready", name)
	}
	return c
}

// freeAddr returns a loopback address that was free a moment ago, below
// the ephemeral range: a broker restarted on it finds it free although
// tests running beside it open connections meanwhile.
func freeAddr(t testing.TB) string {
	t.Helper()
	return testport.Addr(t)
}

// progress says how far a producer child got: messages acknowledged, when
// it last acknowledged one, and its last send error.
func (c *mpChild) progress() (acked int, last time.Time, lastErr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		switch {
		case strings.HasPrefix(l, "ACK "):
			acked++
		case strings.HasPrefix(l, "SENDERR "):
			lastErr = l
		}
	}
	return acked, c.lastAck, lastErr
}

// firstAckAfter is how long after t the producer's first ACK arrived.
func (c *mpChild) firstAckAfter(t time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, at := range c.ackTimes {
		if at.After(t) {
			return at.Sub(t).Round(time.Millisecond)
		}
	}
	return -1
}

// ids returns the IDs on lines starting with prefix.
func (c *mpChild) ids(prefix string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.lines {
		if rest, ok := strings.CutPrefix(l, prefix+" "); ok {
			out = append(out, rest)
		}
		if strings.HasPrefix(l, "ERROR") {
			out = append(out, "!"+l)
		}
	}
	return out
}

func (c *mpChild) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(sig))
	_ = c.cmd.Wait()
	<-c.done
}

func TestMultiProcess_BrokerProducersConsumers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts six processes")
	}
	t.Parallel() // its children wait on each other, not on this process
	addr := freeAddr(t)
	dir := t.TempDir()
	brokerEnv := []string{"EQUEUE_MP_ADDR=" + addr, "EQUEUE_MP_DIR=" + dir}
	broker := startChild(t, "broker", "broker", brokerEnv...)
	var consumers []*mpChild
	for _, n := range []string{"c1", "c2", "c3"} {
		consumers = append(consumers, startChild(t, "consumer", n, "EQUEUE_MP_ADDR="+addr))
	}
	var producers []*mpChild
	for _, n := range []string{"p1", "p2"} {
		producers = append(producers, startChild(t, "producer", n, "EQUEUE_MP_ADDR="+addr, "EQUEUE_MP_COUNT=4000"))
	}
	time.Sleep(400 * time.Millisecond)

	// A consumer dies without leaving: its queues must move to the others.
	consumers[0].stop(t, syscall.SIGKILL)
	admin, err := remote.Dial(addr, nil)
	require.NoError(t, err)
	defer admin.Close()
	ctx := context.Background()
	eventually(t, 30*time.Second, func() bool {
		gi, err := admin.Group(ctx, "g")
		if err != nil || len(gi.Members) != 2 {
			return false
		}
		n := 0
		for _, m := range gi.Members {
			for _, q := range m.Queues {
				if q.Topic == "t" {
					n++
				}
			}
		}
		return n == 6
	}, "the killed consumer's queues are reassigned after the session timeout")

	// The broker is killed and restarted on the same address and directory.
	broker.stop(t, syscall.SIGKILL)
	time.Sleep(300 * time.Millisecond)
	for _, p := range producers {
		select {
		case <-p.done:
			t.Fatalf("%s finished before the broker restart: the run is too short to show anything", p.name)
		default:
		}
	}
	broker = startChild(t, "broker", "broker2", brokerEnv...)
	restarted := time.Now()

	// A producer on a loaded machine may be slow; one that stopped making
	// progress is stuck. Wait while it progresses, and say which it was.
	// Once each has sent enough past the restart it is told to finish.
	for _, p := range producers {
		finishAfter(t, p, restarted, mpSendsAfter)
	}
	for _, p := range producers {
		waitProducer(t, p, "restart", restarted, 60*time.Second)
	}
	acked := map[string]bool{}
	for _, p := range producers {
		for _, id := range ackedInOrder(t, p) {
			acked[id] = true
		}
	}
	waitHandled(t, acked, consumers)
	for _, c := range consumers[1:] {
		c.stop(t, syscall.SIGTERM)
		require.Equal(t, 0, c.cmd.ProcessState.ExitCode(), "%s exits cleanly", c.name)
	}
	broker.stop(t, syscall.SIGTERM)
	require.Equal(t, 0, broker.cmd.ProcessState.ExitCode())
}

// mpSendsAfter is how many messages a producer child acknowledges after
// the broker's restart or pause before it is told to finish: its whole
// count (4,000) took most of the run on two cores with the race detector.
const mpSendsAfter = 500

// finishAfter waits, while p progresses, until p acknowledged n messages
// after at (or finished), then tells it to finish (SIGTERM): it sends no
// message after the one it is sending.
func finishAfter(t *testing.T, p *mpChild, at time.Time, n int) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for p.acksAfter(at) < n {
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
		acked, last, lastErr := p.progress()
		if last.Before(at) {
			last = at
		}
		if time.Since(last) > 60*time.Second {
			t.Fatalf("%s: STUCK: no message acknowledged for 60s; %d acknowledged, %d after the broker's event; last send error: %q",
				p.name, acked, p.acksAfter(at), lastErr)
		}
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
}

// acksAfter is how many messages p acknowledged after t.
func (c *mpChild) acksAfter(t time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, at := range c.ackTimes {
		if at.After(t) {
			n++
		}
	}
	return n
}

// ackedInOrder returns the IDs p acknowledged, checking they are its
// messages from the first on, each once and none skipped (a producer
// child sends one after the other and retries each until it is stored).
func ackedInOrder(t *testing.T, p *mpChild) []string {
	t.Helper()
	ids := p.ids("ACK")
	require.NotEmpty(t, ids, "%s acknowledged nothing", p.name)
	for i, id := range ids {
		require.Equal(t, fmt.Sprintf("%s-%d", p.name, i), id, "%s's acknowledgement %d", p.name, i)
	}
	return ids
}

// waitHandled waits until the consumers handled every acknowledged message.
func waitHandled(t *testing.T, acked map[string]bool, consumers []*mpChild) {
	t.Helper()
	eventually(t, 120*time.Second, func() bool {
		handled := map[string]bool{}
		for _, c := range consumers {
			for _, id := range c.ids("HANDLED") {
				handled[id] = true
			}
		}
		for id := range acked {
			if !handled[id] {
				return false
			}
		}
		return true
	}, "every acknowledged message is handled")
}

// waitProducer waits for p to finish for as long as it keeps acknowledging
// messages; it fails when p made no progress for stall, saying whether p
// was stuck (nothing acknowledged since the broker's event, a restart or
// a pause at at, or nothing for stall) and what its last send error was.
func waitProducer(t *testing.T, p *mpChild, event string, at time.Time, stall time.Duration) {
	t.Helper()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			acked, last, _ := p.progress()
			t.Logf("%s finished: %d acknowledged, the last %v after the broker's %s; first after it at +%v",
				p.name, acked, last.Sub(at).Round(time.Millisecond), event, p.firstAckAfter(at))
			return
		case <-tick.C:
		}
		acked, last, lastErr := p.progress()
		since := last
		if since.Before(at) {
			since = at
		}
		if time.Since(since) < stall {
			continue // still progressing (or reconnecting within stall)
		}
		what := fmt.Sprintf("STUCK: no message acknowledged for %v", stall)
		if last.Before(at) {
			what = fmt.Sprintf("STUCK: no message acknowledged since the broker's %s (a reconnect problem)", event)
		}
		t.Fatalf("%s did not finish: %s; %d of its messages acknowledged, last at %v (broker's %s at %v); last send error: %q",
			p.name, what, acked, last.Format(time.TimeOnly), event, at.Format(time.TimeOnly), lastErr)
	}
}
