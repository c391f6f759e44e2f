// Quickstart opens an engine in a local folder, creates a topic, sends
// messages by key and reads them back.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/equeue-go/equeue"
)

func main() {
	dir := filepath.Join(os.TempDir(), "equeue-quickstart")
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(dir); err != nil {
		log.Fatal(err)
	}
}

func run(dir string) error {
	ctx := context.Background()
	eng, err := equeue.Open(dir, nil) // nil options: SyncAlways, 4 queues per topic
	if err != nil {
		return err
	}
	defer eng.Close()
	fmt.Println("engine open in", dir)

	if err := eng.CreateTopic(ctx, "orders", 4); err != nil && !errors.Is(err, equeue.ErrTopicExists) {
		return err
	}
	p, err := equeue.NewProducer(eng, nil)
	if err != nil {
		return err
	}
	defer p.Close()

	// Messages with the same key land in the same queue, in order.
	for i, customer := range []string{"alice", "bob", "alice", "carol", "bob", "alice"} {
		res, err := p.Send(ctx, &equeue.Message{
			Topic: "orders",
			Tag:   "created",
			Keys:  []string{customer},
			Body:  fmt.Appendf(nil, "order %d for %s", i, customer),
		})
		if err != nil {
			return err
		}
		fmt.Printf("sent   %-22q key=%-5s -> queue %d offset %d\n", fmt.Sprintf("order %d for %s", i, customer), customer, res.Queue, res.Offset)
	}

	info, err := eng.Topic(ctx, "orders")
	if err != nil {
		return err
	}
	for _, q := range info.Queues {
		res, err := eng.Pull(ctx, &equeue.PullRequest{Topic: "orders", Queue: q.ID, Offset: q.MinOffset, Max: 100})
		if err != nil {
			return err
		}
		for _, m := range res.Messages {
			fmt.Printf("read   queue %d offset %d key=%-5s tag=%s body=%q\n", m.Queue, m.Offset, m.Keys[0], m.Tag, m.Body)
		}
	}
	fmt.Println("every message is durable on disk; run again to see offsets continue")
	return nil
}
