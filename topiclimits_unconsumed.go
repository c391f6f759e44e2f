package equeue

import "fmt"

// UnconsumedPolicy is a topic's override of
// RetentionPolicy.KeepUnconsumed (TopicLimits.Unconsumed).
type UnconsumedPolicy int

const (
	// UnconsumedDefault follows the engine's RetentionPolicy.KeepUnconsumed.
	UnconsumedDefault UnconsumedPolicy = iota
	// UnconsumedKeep deletes only messages every group subscribed to the
	// topic has committed past, whatever the engine's policy.
	UnconsumedKeep
	// UnconsumedDrop deletes messages by age and size alone, consumed or
	// not, whatever the engine's policy.
	UnconsumedDrop
)

// String returns "default", "keep" or "drop".
func (p UnconsumedPolicy) String() string {
	switch p {
	case UnconsumedDefault:
		return "default"
	case UnconsumedKeep:
		return "keep"
	case UnconsumedDrop:
		return "drop"
	}
	return fmt.Sprintf("UnconsumedPolicy(%d)", int(p))
}

// ParseUnconsumedPolicy parses "default" (or ""), "keep" or "drop".
func ParseUnconsumedPolicy(s string) (UnconsumedPolicy, error) {
	switch s {
	case "", "default":
		return UnconsumedDefault, nil
	case "keep":
		return UnconsumedKeep, nil
	case "drop":
		return UnconsumedDrop, nil
	}
	return 0, fmt.Errorf("%w: unconsumed policy %q: use default, keep or drop", ErrInvalidArgument, s)
}

// MarshalText stores the policy by name.
func (p UnconsumedPolicy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses a name written by MarshalText.
func (p *UnconsumedPolicy) UnmarshalText(b []byte) error {
	v, err := ParseUnconsumedPolicy(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// keepUnconsumed is whether retention keeps t's unconsumed messages, given
// the engine's policy.
func (t *topic) keepUnconsumed(engine bool) bool {
	switch t.topicLimits().Unconsumed {
	case UnconsumedKeep:
		return true
	case UnconsumedDrop:
		return false
	}
	return engine
}
