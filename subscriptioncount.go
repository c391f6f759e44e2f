package equeue

import "fmt"

// checkSubscriptionCount refuses, with ErrInvalidOptions, a consumer whose
// join would pass MaxSubscriptions: n subscriptions, plus the group's retry
// topic when retry (a clustering Consumer that is not Orderly subscribes it
// too). The bound is the same on every broker, so the consumer is refused
// when it is made rather than by the join of its Start.
func checkSubscriptionCount(n int, retry bool) error {
	switch {
	case retry && n+1 > MaxSubscriptions:
		return fmt.Errorf("%w: %d subscriptions and the group's retry topic, more than a join takes, %d (MaxSubscriptions); "+
			"a clustering consumer that is not Orderly subscribes the retry topic too", ErrInvalidOptions, n, MaxSubscriptions)
	case n > MaxSubscriptions:
		return fmt.Errorf("%w: %d subscriptions, more than a join takes, %d (MaxSubscriptions)", ErrInvalidOptions, n, MaxSubscriptions)
	}
	return nil
}
