package equeue

import (
	"fmt"

	"github.com/equeue-go/equeue/store"
)

// MinMemoryBudget is the smallest Options.MemoryBudget accepted (16 MiB).
const MinMemoryBudget = store.MinMemoryBudget

// MaxMemoryBudget is the largest Options.MemoryBudget accepted (1 TiB).
const MaxMemoryBudget = store.MaxMemoryBudget

// validateBudget checks Options.MemoryBudget.
func (o *Options) validateBudget() error {
	switch {
	case o.MemoryBudget == 0:
		return nil
	case o.MemoryBudget < MinMemoryBudget:
		return fmt.Errorf("%w: MemoryBudget %d must be 0 or at least %d bytes (16 MiB)",
			ErrInvalidOptions, o.MemoryBudget, int64(MinMemoryBudget))
	case o.MemoryBudget > MaxMemoryBudget:
		return fmt.Errorf("%w: MemoryBudget %d must be at most %d bytes (1 TiB)",
			ErrInvalidOptions, o.MemoryBudget, int64(MaxMemoryBudget))
	case o.InMemory || o.Store != nil:
		return fmt.Errorf("%w: MemoryBudget sizes the Badger store; it does not apply with InMemory or Store",
			ErrInvalidOptions)
	}
	return nil
}

// applyBudget replaces o.Badger by the profile o.MemoryBudget gives, with
// the fields o.Badger sets kept (they override the budget). Call it on a
// validated copy.
func (o *Options) applyBudget() {
	if o.MemoryBudget <= 0 {
		return
	}
	var bo store.BadgerOptions
	if o.Badger != nil {
		bo = *o.Badger
	}
	bo, err := bo.WithBudget(o.MemoryBudget)
	if err != nil {
		// Validate refused budgets below the floor already.
		return
	}
	o.Badger = &bo
}
