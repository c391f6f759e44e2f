package equeue

import (
	"sync"
	"sync/atomic"

	"github.com/equeue-go/equeue/store"
)

// heldMetaStore holds, once armed, the first store write with a metadata
// operation that match accepts, until open is called: a disk that hangs
// under one group's write.
type heldMetaStore struct {
	Store
	match func(store.MetaOp) bool
	armed atomic.Bool
	held  chan struct{} // closed when a write is held
	gate  chan struct{} // closed by open
	onceH sync.Once
	onceG sync.Once
}

func newHeldMetaStore(match func(store.MetaOp) bool) *heldMetaStore {
	return &heldMetaStore{Store: store.NewMemory(), match: match, held: make(chan struct{}), gate: make(chan struct{})}
}

func (s *heldMetaStore) open() { s.onceG.Do(func() { close(s.gate) }) }

func (s *heldMetaStore) Write(b *store.Batch) error {
	if s.armed.Load() {
		for _, op := range b.Meta {
			if s.match(op) {
				s.onceH.Do(func() { close(s.held) })
				<-s.gate
				break
			}
		}
	}
	return s.Store.Write(b)
}
