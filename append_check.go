package equeue

import "fmt"

// checkAppendRequest refuses an append request whose own fields are bad,
// before the engine looks up (or auto-creates) its topic: the error is then
// the same whether or not the topic exists, and a refused append makes no
// topic. What depends on the topic (its queue, its limits, MaxDelay as of
// the send) is checked later.
func checkAppendRequest(req *AppendRequest) error {
	if req == nil || len(req.Messages) == 0 {
		return fmt.Errorf("%w: no messages to append", ErrInvalidArgument)
	}
	if req.Sync != nil {
		if err := req.Sync.validate(); err != nil {
			return err
		}
	}
	for i, m := range req.Messages {
		if m == nil {
			return fmt.Errorf("%w: message %d is nil", ErrInvalidArgument, i)
		}
		if m.Topic != "" && m.Topic != req.Topic {
			return fmt.Errorf("%w: message %d is for topic %q, not %q", ErrInvalidArgument, i, m.Topic, req.Topic)
		}
		if m.Delay < 0 || m.TTL < 0 {
			return fmt.Errorf("%w: message %d has a negative delay or TTL", ErrInvalidDelay, i)
		}
	}
	return nil
}
