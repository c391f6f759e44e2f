// Consumer joins the "workers" group on a remote broker and handles jobs
// until interrupted (or until -n jobs were handled); start several to see
// the queues shared among them.
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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7654", "broker address")
	n := flag.Int64("n", 0, "stop after this many jobs (0: run until interrupted)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *n, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run handles jobs from the broker at addr until ctx ends or, with n > 0,
// n jobs were handled. It reports a failed Close as its error too: the
// consumer's Close commits what was handled and leaves the group.
func run(ctx context.Context, addr string, n int64, out io.Writer) (err error) {
	client, err := remote.Dial(addr, &remote.ClientOptions{DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, client.Close()) }()
	done := make(chan struct{})
	var handled atomic.Int64
	c, err := equeue.NewConsumer(client, equeue.ConsumerOptions{
		Group:         "workers",
		Subscriptions: []equeue.Subscription{{Topic: "jobs"}},
		From:          equeue.ConsumeFromEarliest,
		Handler: func(_ context.Context, m *equeue.Message) error {
			fmt.Fprintf(out, "handled %q from queue %d offset %d\n", m.Body, m.Queue, m.Offset)
			if handled.Add(1) == n {
				close(done)
			}
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
	case <-done:
	}
	return nil
}
