package remote_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
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
	case "broker":
		e, err := equeue.Open(os.Getenv("EQUEUE_MP_DIR"), &equeue.Options{SessionTimeout: time.Second})
		if err != nil {
			say("ERROR %v", err)
			os.Exit(3)
		}
		_ = e.CreateTopic(ctx, "t", 6)
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
			id := fmt.Sprintf("%s-%d", name, i)
			for {
				sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := p.Send(sctx, &equeue.Message{Topic: "t", ID: id, Keys: []string{strconv.Itoa(i % 11)}, Body: []byte(id)})
				cancel()
				if err == nil {
					break
				}
				time.Sleep(50 * time.Millisecond) // broker down: retry the same message
			}
			say("ACK %s", id)
			time.Sleep(time.Millisecond)
		}
		say("DONE")
		_ = c.Close()
		os.Exit(0)
	case "consumer":
		c, err := remote.Dial(addr, nil)
		if err != nil {
			say("ERROR %v", err)
			os.Exit(3)
		}
		cons, err := equeue.NewConsumer(c, equeue.ConsumerOptions{Group: "g", ID: name, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			From: equeue.ConsumeFromEarliest, HeartbeatInterval: 200 * time.Millisecond, CommitInterval: 100 * time.Millisecond,
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

// mpChild is a running child process and what it printed.
type mpChild struct {
	name  string
	cmd   *exec.Cmd
	ready chan struct{}
	done  chan struct{} // closed when its output ends
	mu    sync.Mutex
	lines []string
}

func startChild(t *testing.T, role, name string, env ...string) *mpChild {
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
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
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

	for _, p := range producers {
		select {
		case <-p.done:
		case <-time.After(120 * time.Second):
			t.Fatalf("%s did not finish", p.name)
		}
	}
	acked := map[string]bool{}
	for _, p := range producers {
		for _, id := range p.ids("ACK") {
			require.False(t, strings.HasPrefix(id, "!"), id)
			acked[id] = true
		}
	}
	require.Len(t, acked, 8000)
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
	}, "every acknowledged message is consumed")
	for _, c := range consumers[1:] {
		c.stop(t, syscall.SIGTERM)
		require.Equal(t, 0, c.cmd.ProcessState.ExitCode(), "%s exits cleanly", c.name)
	}
	broker.stop(t, syscall.SIGTERM)
	require.Equal(t, 0, broker.cmd.ProcessState.ExitCode())
}
