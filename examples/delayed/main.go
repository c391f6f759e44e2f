// Delayed schedules jobs for later: each becomes visible to consumers at its
// delivery time and is delivered once. This engine is in memory; in an
// engine opened on a directory a scheduled job also survives restarts.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/equeue-go/equeue"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run reports a failed Close as its error too.
func run(out io.Writer) (err error) {
	ctx := context.Background()
	eng, err := equeue.Open("", &equeue.Options{InMemory: true})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, eng.Close()) }()
	if err := eng.CreateTopic(ctx, "reminders", 2); err != nil {
		return err
	}
	start := time.Now()
	got := make(chan string, 3)
	c, err := equeue.NewConsumer(eng, equeue.ConsumerOptions{
		Group:         "mailer",
		Subscriptions: []equeue.Subscription{{Topic: "reminders"}},
		Handler: func(_ context.Context, m *equeue.Message) error {
			got <- fmt.Sprintf("%-28s after %v", m.Body, time.Since(start).Round(100*time.Millisecond))
			return nil
		},
	})
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, c.Close()) }()

	p, err := equeue.NewProducer(eng, nil)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.Close()) }() // before the consumers and the engine: deferred calls run last-in first-out
	for _, job := range []struct {
		body  string
		delay time.Duration
	}{{"send the weekly digest", 1500 * time.Millisecond}, {"remind about the cart", 500 * time.Millisecond}, {"expire the trial", time.Second}} {
		res, err := p.Send(ctx, &equeue.Message{Topic: "reminders", Body: []byte(job.body), Delay: job.delay})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "scheduled %-24q in %v (delayed=%v)\n", job.body, job.delay, res.Delayed)
	}
	for range 3 {
		fmt.Fprintln(out, "delivered", <-got)
	}
	return nil
}
