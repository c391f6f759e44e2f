package equeue

import (
	"context"
	"testing"
	"time"
)

// BenchmarkPrepareInto prepares the one-message send of BenchmarkSend (a
// key, a 100-byte body, an ID the engine generates): the sender's work
// before it queues the command.
func BenchmarkPrepareInto(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	if err := e.CreateTopic(ctx, "t", 4); err != nil {
		b.Fatal(err)
	}
	m := &Message{Topic: "t", Keys: []string{"k"}, Body: make([]byte, 100)}
	c := &command{}
	req := AppendRequest{Topic: "t", Queue: 1}
	b.ReportAllocs()
	for b.Loop() {
		*c = command{}
		c.msg1[0] = m
		req.Messages = c.msg1[:]
		if _, err := e.prepareInto(ctx, &req, c, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}
