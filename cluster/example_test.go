package cluster_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// A node bootstraps a cluster of itself; more voters are added with
// AddVoter (or "equeue cluster add"). Producers and consumers use the node
// as a Broker.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "equeue-cluster-example-*")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	n, err := cluster.Open(dir, &cluster.Options{
		ID: "n1", RaftAddr: "127.0.0.1:0", ClientAddr: "127.0.0.1:7654", Bootstrap: true,
	})
	if err != nil {
		panic(err)
	}
	defer n.Close()

	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); !n.Status().Serving; { // elected, then serving as leader
		if time.Now().After(deadline) {
			panic("no leader after 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := n.CreateTopic(ctx, "orders", 1); err != nil {
		panic(err)
	}
	p, err := equeue.NewProducer(n, nil)
	if err != nil {
		panic(err)
	}
	defer p.Close()
	res, err := p.Send(ctx, &equeue.Message{Topic: "orders", Body: []byte("hello")})
	if err != nil {
		panic(err)
	}
	fmt.Println("stored at offset", res.Offset, "once a majority had it")
	// Output: stored at offset 0 once a majority had it
}
