package allocate_test

import (
	"fmt"
	"maps"
	"slices"

	"github.com/equeue-go/equeue/allocate"
)

func ExampleAverage() {
	var queues []allocate.Queue
	for id := range 8 {
		queues = append(queues, allocate.Queue{Topic: "orders", ID: id})
	}
	consumers := []string{"consumer-c", "consumer-a", "consumer-b"}

	owned := allocate.Average().Allocate(queues, consumers)
	for _, c := range slices.Sorted(maps.Keys(owned)) {
		fmt.Print(c, ":")
		for _, q := range owned[c] {
			fmt.Printf(" %s/%d", q.Topic, q.ID)
		}
		fmt.Println()
	}
	// Output:
	// consumer-a: orders/0 orders/1 orders/2
	// consumer-b: orders/3 orders/4 orders/5
	// consumer-c: orders/6 orders/7
}
