package cluster

import (
	"reflect"
	"sync"

	"github.com/hashicorp/raft"
)

// raftGone is closed once a node's Raft was shut down (Close, failStop).
// Raft answers nothing after that: an entry still in its buffered apply
// channel (BatchApplyCh) when it shut down, or a leadership transfer still
// in its queue, is never answered, and a wait on its future would block
// for ever. bind ends such a wait there.
type raftGone struct {
	ch   chan struct{}
	once sync.Once
}

func newRaftGone() *raftGone { return &raftGone{ch: make(chan struct{})} }

// close notes that Raft was shut down. Twice is fine.
func (g *raftGone) close() { g.once.Do(func() { close(g.ch) }) }

// shutdownChType is the type of the field Raft's deferred futures end
// their wait on (deferError.ShutdownCh).
var shutdownChType = reflect.TypeFor[chan struct{}]()

// bind makes f's Error return raft.ErrRaftShutdown once g is closed, as
// Raft does itself for the futures it ties to its shutdown (a snapshot's
// restore): it sets f's ShutdownCh when Raft left it unset. A future bind
// cannot reach (an error future, answered already; one of a Raft that has
// no such field) keeps its wait as it is. Call it before f.Error, on the
// goroutine that calls it. A nil g binds nothing.
func (g *raftGone) bind(f raft.Future) {
	if g == nil || f == nil {
		return
	}
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return
	}
	ch := v.Elem().FieldByName("ShutdownCh")
	if !ch.IsValid() || !ch.CanSet() || ch.Type() != shutdownChType || !ch.IsNil() {
		return
	}
	ch.Set(reflect.ValueOf(g.ch))
}

// awaitFuture sends f's error to done once Raft answers f, or once Raft
// was shut down without answering it (gone; raft.ErrRaftShutdown).
func awaitFuture(f raft.Future, gone *raftGone, done chan<- error) {
	gone.bind(f)
	done <- f.Error()
}
