// Consumer joins the "workers" group on a remote broker and handles jobs
// until interrupted (or until -n jobs were handled); start several to see
// the queues shared among them.
package main

import (
	"context"
	"flag"
	"fmt"
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

	client, err := remote.Dial(*addr, &remote.ClientOptions{DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	done := make(chan struct{})
	var handled atomic.Int64
	c, err := equeue.NewConsumer(client, equeue.ConsumerOptions{
		Group:         "workers",
		Subscriptions: []equeue.Subscription{{Topic: "jobs"}},
		From:          equeue.ConsumeFromEarliest,
		Handler: func(_ context.Context, m *equeue.Message) error {
			fmt.Printf("handled %q from queue %d offset %d\n", m.Body, m.Queue, m.Offset)
			if handled.Add(1) == *n {
				close(done)
			}
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	select {
	case <-stop:
	case <-done:
	}
	if err := c.Close(); err != nil { // commits and leaves the group
		log.Fatal(err)
	}
}
