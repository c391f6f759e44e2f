// Workqueue runs three workers in one consumer group sharing a topic: the
// group's queues are divided among them, and every job is handled once.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sort"
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
	if err := eng.CreateTopic(ctx, "jobs", 6); err != nil {
		return err
	}

	const jobs = 60
	var (
		mu      sync.Mutex
		handled = map[string]int{}
		all     sync.WaitGroup
	)
	all.Add(jobs)
	var workers []*equeue.Consumer
	for _, name := range []string{"worker-1", "worker-2", "worker-3"} {
		c, err := equeue.NewConsumer(eng, equeue.ConsumerOptions{
			Group:         "resizers",
			ID:            name,
			Subscriptions: []equeue.Subscription{{Topic: "jobs"}},
			Handler: func(_ context.Context, m *equeue.Message) error {
				time.Sleep(2 * time.Millisecond) // pretend to work
				mu.Lock()
				handled[name]++
				mu.Unlock()
				all.Done()
				return nil
			},
		})
		if err != nil {
			return err
		}
		if err := c.Start(ctx); err != nil {
			return err
		}
		workers = append(workers, c)
	}

	p, err := equeue.NewProducer(eng, nil)
	if err != nil {
		return err
	}
	for i := range jobs {
		if _, err := p.Send(ctx, &equeue.Message{Topic: "jobs", Body: fmt.Appendf(nil, "image-%03d.png", i)}); err != nil {
			return errors.Join(err, p.Close())
		}
	}
	if err := p.Close(); err != nil {
		return err
	}
	all.Wait()
	for _, c := range workers {
		if err := c.Close(); err != nil {
			return err
		}
	}

	g, err := eng.Group(ctx, "resizers")
	if err != nil {
		return err
	}
	names := make([]string, 0, len(handled))
	for n := range handled {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(out, "%s handled %d jobs\n", n, handled[n])
	}
	// The group also consumes its own retry topic (%RETRY%resizers), so
	// count only the queues of the topic the jobs were sent to.
	var queues int
	var lag int64
	for _, q := range g.Queues {
		if q.Topic != "jobs" {
			continue
		}
		queues++
		lag += q.Lag
	}
	fmt.Fprintf(out, "group %q: %d queues of topic jobs, lag %d after all workers committed and left\n", g.Name, queues, lag)
	return nil
}
