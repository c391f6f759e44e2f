package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/equeue-go/equeue"
)

// waitFor polls cond until it holds or a minute passes.
func waitFor(cond func() bool) {
	deadline := time.Now().Add(time.Minute)
	for !cond() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// A handler that cannot do its work yet asks for the message again later,
// with a wait of its choosing instead of the group's backoff.
func ExampleRetryAfter() {
	ctx := context.Background()
	eng, _ := equeue.Open("", &equeue.Options{InMemory: true})
	defer eng.Close()
	_ = eng.CreateTopic(ctx, "emails", 1)

	done := make(chan struct{})
	c, err := equeue.NewConsumer(eng, equeue.ConsumerOptions{
		Group:         "mailer",
		Subscriptions: []equeue.Subscription{{Topic: "emails"}},
		Handler: func(_ context.Context, m *equeue.Message) error {
			if m.Attempt == 0 {
				fmt.Println("attempt 0: mail server busy, retry in 20ms")
				return equeue.RetryAfter(20*time.Millisecond, errors.New("mail server busy"))
			}
			fmt.Printf("attempt %d: sent %s\n", m.Attempt, m.Body)
			close(done)
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = c.Start(ctx)
	defer c.Close()
	p, _ := equeue.NewProducer(eng, nil)
	_, _ = p.Send(ctx, &equeue.Message{Topic: "emails", Body: []byte("welcome mail")})
	<-done
	// Output:
	// attempt 0: mail server busy, retry in 20ms
	// attempt 1: sent welcome mail
}

// A handler that can never succeed with a message gives up at once: the
// message goes to the group's dead letters with its error, where an
// operator can list it.
func ExampleDeadLetter() {
	ctx := context.Background()
	eng, _ := equeue.Open("", &equeue.Options{InMemory: true})
	defer eng.Close()
	_ = eng.CreateTopic(ctx, "payments", 1)

	c, _ := equeue.NewConsumer(eng, equeue.ConsumerOptions{
		Group:         "billing",
		Subscriptions: []equeue.Subscription{{Topic: "payments"}},
		Handler: func(_ context.Context, m *equeue.Message) error {
			if m.Tag == "invalid" {
				return equeue.DeadLetter(errors.New("card number fails the Luhn check"))
			}
			return nil
		},
	})
	_ = c.Start(ctx)
	defer c.Close()
	p, _ := equeue.NewProducer(eng, nil)
	_, _ = p.Send(ctx, &equeue.Message{Topic: "payments", Tag: "invalid", Body: []byte("4000 0000 0000 0002")})

	var dls []equeue.DLQEntry
	waitFor(func() bool {
		dls, _ = eng.ListDeadLetters(ctx, "billing", equeue.ListDeadLettersRequest{})
		return len(dls) == 1
	})
	dl := dls[0]
	fmt.Printf("%s from %s/%d:%d after %d attempt: %s\n", dl.Message.Body, dl.Message.Topic, dl.Message.Queue, dl.Message.Offset, dl.Attempts, dl.LastError)
	// Output: 4000 0000 0000 0002 from payments/0:0 after 1 attempt: dead letter: card number fails the Luhn check
}

// Dead letters are listed a page at a time and sent back to their group
// (through its retry topic, so other groups of the topic do not get them
// again) once the cause is fixed; each is redriven at most once.
func ExampleEngine_Redrive() {
	ctx := context.Background()
	eng, _ := equeue.Open("", &equeue.Options{InMemory: true})
	defer eng.Close()
	_ = eng.CreateTopic(ctx, "orders", 1)

	fixed := make(chan struct{})
	redelivered := make(chan string)
	c, _ := equeue.NewConsumer(eng, equeue.ConsumerOptions{
		Group:         "shipping",
		Subscriptions: []equeue.Subscription{{Topic: "orders"}},
		Handler: func(_ context.Context, m *equeue.Message) error {
			select {
			case <-fixed:
				redelivered <- string(m.Body)
				return nil
			default:
				return equeue.DeadLetter(errors.New("no address"))
			}
		},
	})
	_ = c.Start(ctx)
	defer c.Close()
	p, _ := equeue.NewProducer(eng, nil)
	for i, body := range []string{"order 1", "order 2", "order 3"} {
		_, _ = p.Send(ctx, &equeue.Message{Topic: "orders", Body: []byte(body)})
		// One at a time, so the dead letters keep the orders' order.
		waitFor(func() bool {
			all, _ := eng.ListDeadLetters(ctx, "shipping", equeue.ListDeadLettersRequest{})
			return len(all) == i+1
		})
	}

	// Two per page: the next page starts past the last entry listed.
	from := int64(0)
	for {
		page, err := eng.ListDeadLetters(ctx, "shipping", equeue.ListDeadLettersRequest{From: from, Max: 2})
		if err != nil {
			log.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, dl := range page {
			fmt.Printf("dead letter %d: %s (%s)\n", dl.Offset, dl.Message.Body, dl.LastError)
		}
		from = page[len(page)-1].Offset + 1
	}

	close(fixed) // the cause is fixed: send the second one back
	n, err := eng.Redrive(ctx, "shipping", equeue.RedriveRequest{Offsets: []int64{1}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("redriven:", n, "handled again:", <-redelivered)
	n, _ = eng.Redrive(ctx, "shipping", equeue.RedriveRequest{Offsets: []int64{1}})
	fmt.Println("redriven a second time:", n)
	// Output:
	// dead letter 0: order 1 (dead letter: no address)
	// dead letter 1: order 2 (dead letter: no address)
	// dead letter 2: order 3 (dead letter: no address)
	// redriven: 1 handled again: order 2
	// redriven a second time: 0
}

// A PullConsumer is a group member for a program that runs its own loop:
// it fetches from the queues the group grants it and commits when it says.
func ExamplePullConsumer() {
	ctx := context.Background()
	eng, _ := equeue.Open("", &equeue.Options{InMemory: true})
	defer eng.Close()
	_ = eng.CreateTopic(ctx, "events", 2)
	p, _ := equeue.NewProducer(eng, nil)
	for _, body := range []string{"a", "b", "c", "d"} {
		_, _ = p.Send(ctx, &equeue.Message{Topic: "events", Body: []byte(body)})
	}

	pc, err := equeue.NewPullConsumer(eng, equeue.PullConsumerOptions{
		Group:         "indexer",
		Subscriptions: []equeue.Subscription{{Topic: "events"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := pc.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer pc.Close()
	for _, q := range pc.Assigned() { // the only member owns both queues
		msgs, err := pc.Fetch(ctx, q, 10, 0)
		if err != nil {
			log.Fatal(err)
		}
		for _, m := range msgs {
			fmt.Printf("%s: %s\n", q, m.Body)
		}
		// Commit what was handled: a restart continues after it.
		if next, ok := pc.Position(q); ok {
			_ = pc.Commit(ctx, q, next)
		}
	}
	g, _ := eng.Group(ctx, "indexer")
	var lag int64
	for _, q := range g.Queues {
		lag += q.Lag
	}
	fmt.Println("lag after commit:", lag)
	// Output:
	// events/0: a
	// events/0: c
	// events/1: b
	// events/1: d
	// lag after commit: 0
}
