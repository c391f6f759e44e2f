package remote

import (
	"fmt"
	"math"

	"github.com/equeue-go/equeue"
)

// checkQueue refuses a queue number the wire cannot carry: queues travel
// as int32, and no topic has a queue beyond that range. Narrowed, such a
// number would name another queue (the range's bound) to the broker. It
// matches equeue.ErrInvalidArgument and equeue.ErrQueueNotFound, which the
// engine answers for a queue its topic does not have.
func checkQueue(topic string, q int) error {
	if q < math.MinInt32 || q > math.MaxInt32 {
		return fmt.Errorf("%w: %w: queue %d of topic %q is beyond the range of queue numbers (int32)",
			equeue.ErrInvalidArgument, equeue.ErrQueueNotFound, q, topic)
	}
	return nil
}

// checkGrants is checkQueue for each of grants.
func checkGrants(grants []equeue.Grant) error {
	for _, g := range grants {
		if err := checkQueue(g.Topic, g.Queue); err != nil {
			return err
		}
	}
	return nil
}
