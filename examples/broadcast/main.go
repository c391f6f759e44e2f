// Broadcast shows a broadcasting group: every member receives every
// message, each with its own offsets (here: two cache nodes that must both
// see every invalidation). Delivery is at least once, so each node keeps
// an invalidation once, by its ID, however often it comes; the run gives
// up with an error if a node has not received them all within a minute.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
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
	if err := eng.CreateTopic(ctx, "invalidations", 2); err != nil {
		return err
	}
	keys := []string{"user:1", "user:2", "cart:9", "price:4"}
	nodes := []string{"cache-a", "cache-b"}
	in := newInbox(len(nodes), len(keys))
	for _, node := range nodes {
		c, err := equeue.NewConsumer(eng, equeue.ConsumerOptions{
			Group:         "caches",
			ID:            node, // a stable ID lets a restarted node resume from its own offsets
			Model:         equeue.Broadcasting,
			Subscriptions: []equeue.Subscription{{Topic: "invalidations"}},
			Orderly:       true,
			Handler:       in.node(node),
		})
		if err != nil {
			return err
		}
		if err := c.Start(ctx); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, c.Close()) }()
	}
	p, err := equeue.NewProducer(eng, nil)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.Close()) }() // before the consumers and the engine: deferred calls run last-in first-out
	for _, k := range keys {
		if _, err := p.Send(ctx, &equeue.Message{Topic: "invalidations", Keys: []string{k}, Body: []byte(k)}); err != nil {
			return err
		}
	}
	if err := in.wait(time.Minute); err != nil {
		return err
	}
	for _, node := range nodes {
		fmt.Fprintf(out, "%s received %d of %d invalidations\n", node, len(in.received(node)), len(keys))
	}
	return nil
}

// errGaveUp is returned when the nodes did not all receive every
// invalidation in time.
var errGaveUp = errors.New("gave up waiting for the invalidations")

// inbox keeps what each node received. Delivery is at least once, so it
// keeps an invalidation once per node, by its ID (stable across
// redeliveries), however often it comes; a WaitGroup's Done per delivery
// would go below zero and panic on the first repeat.
type inbox struct {
	want int           // invalidations to receive, over all nodes
	done chan struct{} // closed when every node received every invalidation

	mu   sync.Mutex
	seen map[string]map[string]bool // IDs received, by node
	got  map[string][]string        // bodies received, by node
}

func newInbox(nodes, invalidations int) *inbox {
	in := &inbox{want: nodes * invalidations, done: make(chan struct{}), seen: map[string]map[string]bool{}, got: map[string][]string{}}
	if in.want <= 0 {
		close(in.done)
	}
	return in
}

// node returns the handler of the cache node name.
func (in *inbox) node(name string) equeue.Handler {
	return func(_ context.Context, m *equeue.Message) error {
		in.mu.Lock()
		defer in.mu.Unlock()
		if in.seen[name][m.ID] {
			return nil // again: already invalidated
		}
		if in.seen[name] == nil {
			in.seen[name] = map[string]bool{}
		}
		in.seen[name][m.ID] = true
		in.got[name] = append(in.got[name], string(m.Body))
		if in.count() == in.want {
			close(in.done)
		}
		return nil
	}
}

// count returns how many invalidations the nodes received, each once.
// The caller holds mu.
func (in *inbox) count() int {
	n := 0
	for _, ids := range in.seen {
		n += len(ids)
	}
	return n
}

// wait returns once every node received every invalidation, or an error
// matching errGaveUp after limit.
func (in *inbox) wait(limit time.Duration) error {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-in.done:
		return nil
	case <-timer.C:
		in.mu.Lock()
		defer in.mu.Unlock()
		return fmt.Errorf("%w: %d of %d (every invalidation to every node) received within %v", errGaveUp, in.count(), in.want, limit)
	}
}

// received returns the invalidations node received, in the order it
// received them.
func (in *inbox) received(node string) []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.got[node])
}
