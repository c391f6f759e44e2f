package equeue_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/equeue-go/equeue"
)

// A topic that holds at most 4 KiB of messages refuses a send that would
// take it past that.
func ExampleTopicLimits_maxBytes() {
	ctx := context.Background()
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	err = e.CreateTopicWith(ctx, "uploads", equeue.TopicOptions{Queues: 1,
		Limits: equeue.TopicLimits{MaxBytes: 4096, Overflow: equeue.OverflowReject}})
	if err != nil {
		panic(err)
	}
	p, err := equeue.NewProducer(e, nil)
	if err != nil {
		panic(err)
	}
	defer p.Close()
	_, err = p.Send(ctx, &equeue.Message{Topic: "uploads", Body: make([]byte, 3000)})
	fmt.Println("first send:", err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "uploads", Body: make([]byte, 3000)})
	fmt.Println("second send refused:", errors.Is(err, equeue.ErrTopicFull))
	info, err := e.Topic(ctx, "uploads")
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Limits, "/", info.Messages, "message")
	// Output:
	// first send: <nil>
	// second send refused: true
	// max-bytes=4096 overflow=reject / 1 message
}
