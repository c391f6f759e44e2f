// Broadcast shows a broadcasting group: every member receives every
// message, each with its own offsets (here: two cache nodes that must both
// see every invalidation).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"

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
	var all sync.WaitGroup
	all.Add(2 * len(keys))
	var mu sync.Mutex
	got := map[string][]string{}
	for _, node := range []string{"cache-a", "cache-b"} {
		c, err := equeue.NewConsumer(eng, equeue.ConsumerOptions{
			Group:         "caches",
			ID:            node, // a stable ID lets a restarted node resume from its own offsets
			Model:         equeue.Broadcasting,
			Subscriptions: []equeue.Subscription{{Topic: "invalidations"}},
			Orderly:       true,
			Handler: func(_ context.Context, m *equeue.Message) error {
				mu.Lock()
				got[node] = append(got[node], string(m.Body))
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
	all.Wait()
	for _, node := range []string{"cache-a", "cache-b"} {
		fmt.Fprintf(out, "%s received %d of %d invalidations\n", node, len(got[node]), len(keys))
	}
	return nil
}
