// Workqueue runs three workers in one consumer group sharing a topic: the
// group's queues are divided among them, and every job is handled. Delivery
// is at least once, so the jobs are counted by ID: a job delivered again
// (after a rebalance, or a failed attempt) is not counted twice. The run
// gives up with an error if the jobs are not all handled within a minute.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
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
	prog := newProgress(jobs)
	var workers []*equeue.Consumer
	// Close is idempotent: this closes the workers on an early return.
	defer func() { err = errors.Join(err, closeAll(workers)) }()
	for _, name := range []string{"worker-1", "worker-2", "worker-3"} {
		c, err := equeue.NewConsumer(eng, equeue.ConsumerOptions{
			Group:         "resizers",
			ID:            name,
			Subscriptions: []equeue.Subscription{{Topic: "jobs"}},
			Handler:       prog.worker(name),
		})
		if err != nil {
			return err
		}
		workers = append(workers, c)
		if err := c.Start(ctx); err != nil {
			return err
		}
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
	if err := prog.wait(time.Minute); err != nil {
		return err
	}
	// Every worker commits its offsets and leaves before the lag is read.
	if err := closeAll(workers); err != nil {
		return err
	}
	handled := prog.perWorker()

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

// closeAll closes the workers, each committing its offsets and leaving the
// group, and returns what failed.
func closeAll(workers []*equeue.Consumer) error {
	var errs []error
	for _, c := range workers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// errGaveUp is returned when the jobs were not all handled in time (one
// lost, or failing until it went to the dead letters).
var errGaveUp = errors.New("gave up waiting for the jobs")

// progress counts the jobs handled. Delivery is at least once, so it
// counts each job once, by its ID (stable across redeliveries), however
// often it comes; a WaitGroup's Done per delivery would go below zero and
// panic on the first repeat.
type progress struct {
	want int
	done chan struct{} // closed when want distinct jobs were handled

	mu      sync.Mutex
	seen    map[string]bool // IDs of the jobs handled
	handled map[string]int  // deliveries handled, by worker
}

func newProgress(jobs int) *progress {
	p := &progress{want: jobs, done: make(chan struct{}), seen: map[string]bool{}, handled: map[string]int{}}
	if jobs <= 0 {
		close(p.done)
	}
	return p
}

// worker returns the handler of the worker name: it does the job and
// counts it.
func (p *progress) worker(name string) equeue.Handler {
	return func(_ context.Context, m *equeue.Message) error {
		time.Sleep(2 * time.Millisecond) // pretend to work
		p.mu.Lock()
		defer p.mu.Unlock()
		p.handled[name]++
		if !p.seen[m.ID] {
			p.seen[m.ID] = true
			if len(p.seen) == p.want {
				close(p.done)
			}
		}
		return nil
	}
}

// wait returns once every job was handled, or an error matching
// errGaveUp after limit.
func (p *progress) wait(limit time.Duration) error {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
		p.mu.Lock()
		defer p.mu.Unlock()
		return fmt.Errorf("%w: %d of %d jobs handled within %v", errGaveUp, len(p.seen), p.want, limit)
	}
}

// perWorker returns how many deliveries each worker handled.
func (p *progress) perWorker() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.handled)
}
