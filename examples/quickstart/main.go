// Quickstart opens an engine in a folder, creates a topic, sends messages
// by key and reads them back.
//
// With no argument it uses a new temporary folder and removes it at the end;
// with a folder as argument it uses (and keeps) that one, so running it
// twice on the same folder shows the offsets continuing:
//
//	go run ./examples/quickstart
//	go run ./examples/quickstart ./qs-data
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/equeue-go/equeue"
)

func main() {
	if len(os.Args) > 1 {
		// A folder given on the command line is kept, so a second run
		// shows the offsets continuing.
		if err := run(os.Args[1], os.Stdout); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := runInTemp(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// runInTemp runs in a fresh temporary folder and removes it at the end, so
// repeated runs leave nothing behind.
func runInTemp(out io.Writer) (err error) {
	dir, err := os.MkdirTemp("", "equeue-quickstart-*")
	if err != nil {
		return err
	}
	defer func() {
		if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
			err = rerr
		}
	}()
	return runThen(dir, out, "the temporary folder is removed now: give a folder as argument and run twice to see the offsets continue")
}

// run runs in dir, a folder the user gave, which is kept.
func run(dir string, out io.Writer) error {
	return runThen(dir, out, "the folder is kept: run again with "+dir+" to see the offsets continue")
}

// runThen runs in dir and ends with next, which tells what to try next.
// It reports a failed Close as its error too: Close is where the last
// writes are flushed and a failed final commit shows.
func runThen(dir string, out io.Writer, next string) (err error) {
	ctx := context.Background()
	eng, err := equeue.Open(dir, nil) // nil options: SyncAlways, 4 queues per topic
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, eng.Close()) }()
	fmt.Fprintln(out, "engine open in", dir)

	if err := eng.CreateTopic(ctx, "orders", 4); err != nil && !errors.Is(err, equeue.ErrTopicExists) {
		return err
	}
	p, err := equeue.NewProducer(eng, nil)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.Close()) }()

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
		fmt.Fprintf(out, "sent   %-22q key=%-5s -> queue %d offset %d\n", fmt.Sprintf("order %d for %s", i, customer), customer, res.Queue, res.Offset)
	}

	info, err := eng.Topic(ctx, "orders")
	if err != nil {
		return err
	}
	for _, q := range info.Queues {
		if err := readQueue(ctx, eng, q, out); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "every message is durable on disk;", next)
	return nil
}

// pageSize is how many messages one pull reads back.
const pageSize = 100

// readQueue prints every message of queue q stored when the topic was
// described, a page at a time: a folder used before (or the README's
// walkthrough folder) may hold more than one pull returns.
func readQueue(ctx context.Context, eng *equeue.Engine, q equeue.QueueInfo, out io.Writer) error {
	for offset := q.MinOffset; offset < q.MaxOffset; {
		res, err := eng.Pull(ctx, &equeue.PullRequest{Topic: "orders", Queue: q.ID, Offset: offset, Max: pageSize})
		if err != nil {
			return err
		}
		for _, m := range res.Messages {
			// A folder used before may hold messages sent without a key.
			fmt.Fprintf(out, "read   queue %d offset %d key=%-5s tag=%s body=%q\n", m.Queue, m.Offset, strings.Join(m.Keys, ","), m.Tag, m.Body)
		}
		if res.NextOffset <= offset {
			return nil // the end of the queue (nothing left to read)
		}
		offset = res.NextOffset
	}
	return nil
}
