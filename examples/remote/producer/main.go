// Producer sends jobs to a remote broker with the same Producer API as
// in-process.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7654", "broker address")
	n := flag.Int("n", 10, "messages to send")
	flag.Parse()

	client, err := remote.Dial(*addr, &remote.ClientOptions{DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	p, err := equeue.NewProducer(client, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	for i := range *n {
		res, err := p.Send(ctx, &equeue.Message{Topic: "jobs", Keys: []string{fmt.Sprint("user-", i%3)}, Body: fmt.Appendf(nil, "job %d", i)})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("sent job %d -> queue %d offset %d\n", i, res.Queue, res.Offset)
	}
}
