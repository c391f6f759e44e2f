package equeue

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/equeue-go/equeue/store"
)

// storeKeptStarts is Close's last try to store the starts kept in memory
// (offset_resolvedstart.go) whose write the store refused: once the
// engine is closed they are gone, and a member from the latest message
// would start after the messages sent since its Start returned. Close
// calls it once its consumers are closed, before it stops the writer. It
// returns what it could not store; a node that is not the cluster's
// leader (ErrNotLeader) stores nothing of its own, and an engine whose
// writes stopped after a failed fsync reports that failure once, in Close.
func (e *Engine) storeKeptStarts() error {
	c := e.groups
	c.mu.Lock()
	gs := slices.Collect(maps.Values(c.groups))
	c.mu.Unlock()
	var errs []error
	for _, g := range gs {
		if err := e.storeKeptStartsOf(g); err != nil && !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrStoreFailed) {
			errs = append(errs, fmt.Errorf("equeue: close: store the kept starts of group %q: %w", g.name, err))
		}
	}
	return errors.Join(errs...)
}

// storeKeptStartsOf stores g's kept starts of keys with no offset yet.
func (e *Engine) storeKeptStartsOf(g *group) error {
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	g.mu.Lock()
	if !e.groups.current(g) { // deleted meanwhile
		g.mu.Unlock()
		return nil
	}
	var (
		ops []store.MetaOp
		set []offsetSet
	)
	for k, off := range g.starts {
		if _, ok := g.offsets[k]; ok {
			continue
		}
		ops = append(ops, store.MetaOp{Key: offsetMetaKey(g.name, k), Value: offsetValue(off, nil)})
		set = append(set, offsetSet{k: k, off: off})
	}
	g.mu.Unlock()
	return e.storeOffsets(g, ops, set)
}
