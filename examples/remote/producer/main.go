// Producer sends jobs to a remote broker with the same Producer API as
// in-process.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7654", "broker address")
	n := flag.Int("n", 10, "messages to send")
	flag.Parse()

	if err := run(context.Background(), *addr, *n, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run sends n jobs to the broker at addr. It reports a failed Close as its
// error too: the producer's Close finishes its pending sends.
func run(ctx context.Context, addr string, n int, out io.Writer) (err error) {
	client, err := remote.Dial(addr, &remote.ClientOptions{DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, client.Close()) }()
	p, err := equeue.NewProducer(client, nil)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.Close()) }() // before the client's: deferred calls run last-in first-out
	for i := range n {
		res, err := p.Send(ctx, &equeue.Message{Topic: "jobs", Keys: []string{fmt.Sprint("user-", i%3)}, Body: fmt.Appendf(nil, "job %d", i)})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "sent job %d -> queue %d offset %d\n", i, res.Queue, res.Offset)
	}
	return nil
}
