// Delayed schedules jobs for later: each becomes visible to consumers at its
// delivery time and is delivered once. This engine is in memory; in an
// engine opened on a directory a scheduled job also survives restarts.
// Delivery is at least once, so a job delivered again (by its ID) is
// reported once; the run gives up with an error if the jobs have not all
// been delivered within a minute.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
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
	jobs := []struct {
		body  string
		delay time.Duration
	}{{"send the weekly digest", 1500 * time.Millisecond}, {"remind about the cart", 500 * time.Millisecond}, {"expire the trial", time.Second}}
	arr := newArrivals(len(jobs), start)
	c, err := equeue.NewConsumer(eng, equeue.ConsumerOptions{
		Group:         "mailer",
		Subscriptions: []equeue.Subscription{{Topic: "reminders"}},
		Handler:       arr.handle,
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
	for _, job := range jobs {
		res, err := p.Send(ctx, &equeue.Message{Topic: "reminders", Body: []byte(job.body), Delay: job.delay})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "scheduled %-24q in %v (delayed=%v)\n", job.body, job.delay, res.Delayed)
	}
	timeout := time.After(time.Minute)
	for i := range jobs {
		line, err := arr.next(timeout)
		if err != nil {
			return fmt.Errorf("%w: %d of %d jobs delivered within a minute", err, i, len(jobs))
		}
		fmt.Fprintln(out, "delivered", line)
	}
	return nil
}

// errGaveUp is returned when the jobs were not all delivered in time.
var errGaveUp = errors.New("gave up waiting for the jobs")

// arrivals passes on the first delivery of each job, by its ID (stable
// across redeliveries): delivery is at least once, and a job delivered
// again is neither reported twice nor taken for one not delivered yet.
type arrivals struct {
	start time.Time
	got   chan string // a line per job, as it is first delivered

	mu   sync.Mutex
	seen map[string]bool // IDs delivered
}

func newArrivals(jobs int, start time.Time) *arrivals {
	return &arrivals{start: start, got: make(chan string, jobs), seen: map[string]bool{}}
}

// handle is the consumer's handler.
func (a *arrivals) handle(_ context.Context, m *equeue.Message) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen[m.ID] {
		return nil
	}
	a.seen[m.ID] = true
	select {
	case a.got <- fmt.Sprintf("%-28s after %v", m.Body, time.Since(a.start).Round(100*time.Millisecond)):
	default: // more jobs than scheduled (none here): never block the handler
	}
	return nil
}

// next returns the next job delivered, or errGaveUp once timeout fires.
func (a *arrivals) next(timeout <-chan time.Time) (string, error) {
	select {
	case line := <-a.got:
		return line, nil
	case <-timeout:
		return "", errGaveUp
	}
}
