// Consumer joins the "workers" group on a remote broker and handles jobs
// until interrupted (or until -n jobs were handled); start several to see
// the queues shared among them. Delivery is at least once, so -n counts
// jobs by their ID: a job delivered again (a failed attempt retried, a
// rebalance before its commit) does not count twice.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7654", "broker address")
	n := flag.Int64("n", 0, "stop after this many distinct jobs, each counted once however often delivered (0: run until interrupted)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *n, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run handles jobs from the broker at addr until ctx ends or, with n > 0,
// n distinct jobs were handled. It reports a failed Close as its error too: the
// consumer's Close commits what was handled and leaves the group.
func run(ctx context.Context, addr string, n int64, out io.Writer) (err error) {
	client, err := remote.Dial(addr, &remote.ClientOptions{DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, client.Close()) }()
	jobs := newJobCount(n)
	c, err := equeue.NewConsumer(client, equeue.ConsumerOptions{
		Group:         "workers",
		Subscriptions: []equeue.Subscription{{Topic: "jobs"}},
		From:          equeue.ConsumeFromEarliest,
		Handler: func(_ context.Context, m *equeue.Message) error {
			fmt.Fprintf(out, "handled %q from queue %d offset %d\n", m.Body, m.Queue, m.Offset)
			jobs.handled(m)
			return nil
		},
	})
	if err != nil {
		return err
	}
	if err := c.Start(context.Background()); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, c.Close()) }() // before the client's: deferred calls run last-in first-out
	select {
	case <-ctx.Done():
	case <-jobs.done:
	}
	return nil
}

// jobCount counts the jobs handled, each once by its ID (stable across
// redeliveries), however often it is delivered: counting deliveries would
// let a repeat stand in for a job not handled yet, and stop early.
type jobCount struct {
	want int64
	done chan struct{} // closed once want distinct jobs were handled; never with want 0

	mu   sync.Mutex
	seen map[string]bool // IDs of the jobs handled
}

// newJobCount counts up to want jobs; with want 0 or less it counts none
// (the consumer runs until interrupted) and keeps no IDs.
func newJobCount(want int64) *jobCount {
	return &jobCount{want: want, done: make(chan struct{}), seen: map[string]bool{}}
}

// handled counts m's job, unless it was handled before.
func (j *jobCount) handled(m *equeue.Message) {
	if j.want <= 0 {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.seen[m.ID] || int64(len(j.seen)) >= j.want {
		return
	}
	j.seen[m.ID] = true
	if int64(len(j.seen)) == j.want {
		close(j.done)
	}
}
