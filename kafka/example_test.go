package kafka_test

import (
	"context"
	"fmt"
	"log"
	"net"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// A Kafka client produces to an embedded engine, and a native consumer
// could read the same messages.
func ExampleNewServer() {
	ctx := context.Background()
	eng, err := equeue.Open("", &equeue.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	_ = eng.CreateTopic(ctx, "orders", 1)

	srv, err := kafka.NewServer(eng, nil)
	if err != nil {
		log.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	defer srv.Close()

	cl, err := kgo.NewClient(kgo.SeedBrokers(lis.Addr().String()), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("alice"), Value: []byte("order #1")}).FirstErr(); err != nil {
		log.Fatal(err)
	}
	res, _ := eng.Pull(ctx, &equeue.PullRequest{Topic: "orders", Queue: 0, Offset: 0})
	fmt.Println(res.Messages[0].Keys[0], string(res.Messages[0].Body))
	// Output: alice order #1
}
