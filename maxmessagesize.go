package equeue

// MaxMessageSize is the most bytes one message may take encoded (its
// body, key, tag, properties and ID with their lengths, plus fixed
// fields): Options.MaxMessageSize, or the store's largest value when that
// is smaller. A send of a larger message is refused with
// ErrMessageTooLarge, whatever its topic.
func (e *Engine) MaxMessageSize() int { return e.recordLimit() }

// MaxMessageSize is the most bytes one message of the namespace may take
// encoded: its engine's.
func (n *Namespace) MaxMessageSize() int { return n.e.MaxMessageSize() }
