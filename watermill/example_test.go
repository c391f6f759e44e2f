package watermill_test

import (
	"context"
	"fmt"
	"log"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

// A Watermill Router on an in-process equeue engine: one handler turns
// names into greetings on another topic, a second one prints them. The
// topics have one queue and the subscribers are orderly, so the greetings
// come out in the order the names went in.
func Example_router() {
	engine, err := equeue.Open("", &equeue.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer engine.Close()

	pub, err := eqwm.NewPublisher(eqwm.PublisherConfig{Broker: engine, Queues: 1})
	if err != nil {
		log.Fatal(err)
	}
	newSub := func(group string) *eqwm.Subscriber {
		sub, err := eqwm.NewSubscriber(eqwm.SubscriberConfig{Broker: engine, ConsumerGroup: group, Queues: 1})
		if err != nil {
			log.Fatal(err)
		}
		return sub
	}

	router, err := message.NewRouter(message.RouterConfig{}, wm.NopLogger{})
	if err != nil {
		log.Fatal(err)
	}
	router.AddHandler("greet", "names", newSub("greeter"), "greetings", pub,
		func(msg *message.Message) ([]*message.Message, error) {
			greeting := fmt.Sprintf("Hello, %s!", msg.Payload)
			return []*message.Message{message.NewMessage(wm.NewUUID(), []byte(greeting))}, nil
		})
	names := []string{"Ada", "Grace", "Linus"}
	printed := make(chan struct{}, len(names))
	router.AddConsumerHandler("print", "greetings", newSub("printer"),
		func(msg *message.Message) error {
			fmt.Println(string(msg.Payload))
			printed <- struct{}{}
			return nil
		})

	go func() {
		if err := router.Run(context.Background()); err != nil {
			log.Print(err)
		}
	}()
	<-router.Running()

	for _, name := range names {
		if err := pub.Publish("names", message.NewMessage(wm.NewUUID(), []byte(name))); err != nil {
			log.Fatal(err)
		}
	}
	for range names {
		<-printed
	}
	// Close stops the handlers and closes their subscribers and publishers.
	if err := router.Close(); err != nil {
		log.Fatal(err)
	}

	// Output:
	// Hello, Ada!
	// Hello, Grace!
	// Hello, Linus!
}
