package equeue

import "fmt"

// check refuses a reset request that is bad on its own, before the engine
// looks the group up: an unknown target, or a negative offset to reset to.
func (r ResetRequest) check() error {
	switch r.To {
	case ResetToEarliest, ResetToLatest, ResetToTime:
		return nil
	case ResetToOffsets:
		for ref, off := range r.Offsets {
			if off < 0 {
				return fmt.Errorf("%w: negative offset %d for %s", ErrInvalidArgument, off, ref)
			}
		}
		return nil
	default:
		return fmt.Errorf("%w: unknown reset target %d", ErrInvalidArgument, r.To)
	}
}
