package equeue

import "fmt"

// check refuses a redrive request that selects nothing, or names a
// negative offset, whatever dead letters the group has: what it asks for
// is checked before the engine's state is looked at.
func (r RedriveRequest) check() error {
	switch {
	case r.All:
		return nil
	case len(r.Offsets) > 0:
		for _, off := range r.Offsets {
			if off < 0 {
				return fmt.Errorf("%w: redrive of negative dead-letter offset %d", ErrInvalidArgument, off)
			}
		}
		return nil
	case r.To > r.From:
		if r.From < 0 {
			return fmt.Errorf("%w: redrive of negative dead-letter offsets %d..%d", ErrInvalidArgument, r.From, r.To)
		}
		return nil
	default:
		return fmt.Errorf("%w: redrive needs offsets, a range or All", ErrInvalidArgument)
	}
}
