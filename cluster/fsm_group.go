package cluster

import (
	"cmp"
	"slices"

	"github.com/equeue-go/equeue/store"
)

// writeGroup is the write entries ApplyBatch checked and has yet to store
// in one Badger write. It belongs to the FSM goroutine and keeps its
// buffers from one write to the next.
//
// The records are kept per queue: the store writes a queue's records as
// runs of consecutive offsets and sorts what it is given by queue and
// offset, which for a writer batch (sends to several queues in turn) is
// most of what the FSM spends outside Badger. Within a group, each queue's
// offsets only increase in log order (the offset check holds every batch
// to its queues' next offsets), so the records concatenated queue by queue
// are already in the store's order, and each record is the only one at its
// offset: the write stores exactly what writing the entries one by one
// would.
type writeGroup struct {
	limits store.Limits
	runs   map[store.QueueID]*[]store.Entry // each queue's records, in log order
	queues []store.QueueID                  // the queues of runs that hold records
	meta   []store.MetaOp                   // in log order
	next   map[store.QueueID]uint64         // the next offsets they leave
	state  fsmState                         // the state after the last of them
	held   []int                            // their positions in ApplyBatch's answers
	first  uint64                           // the index of the first of them
	ops    int                              // what they weigh against limits
	bytes  int

	entries []store.Entry // the write's records (flush)
	decoded store.Batch   // the entry being applied (decodeEntryInto)
}

// release drops what the decoded entry points to (a Raft entry's data).
func (g *writeGroup) release() {
	clear(g.decoded.Entries)
	clear(g.decoded.Meta)
}

func newWriteGroup(limits store.Limits) *writeGroup {
	return &writeGroup{limits: limits, runs: map[store.QueueID]*[]store.Entry{}, next: map[store.QueueID]uint64{}}
}

func (g *writeGroup) empty() bool { return len(g.held) == 0 }

// fits reports whether b can join the group within the store's limits,
// leaving room for the state op.
func (g *writeGroup) fits(b *store.Batch) bool {
	ops, bytes := g.limits.Cost(b)
	return (g.limits.MaxEntries <= 0 || g.ops+ops+1 <= g.limits.MaxEntries) &&
		(g.limits.MaxBytes <= 0 || g.bytes+bytes+stateRoom <= g.limits.MaxBytes)
}

// add puts b, checked (after are the next offsets it leaves), in the group
// as the entry at index, answered at position i.
func (g *writeGroup) add(b *store.Batch, after map[store.QueueID]uint64, index uint64, i int, state fsmState) {
	for k := range b.Entries {
		en := &b.Entries[k]
		run := g.runs[en.Queue]
		if run == nil {
			run = new([]store.Entry)
			g.runs[en.Queue] = run
		}
		if len(*run) == 0 {
			g.queues = append(g.queues, en.Queue)
		}
		*run = append(*run, *en)
	}
	g.meta = append(g.meta, b.Meta...)
	for q, n := range after {
		g.next[q] = n
	}
	ops, bytes := g.limits.Cost(b)
	g.ops, g.bytes = g.ops+ops, g.bytes+bytes
	if g.empty() {
		g.first = index
	}
	g.state = state
	g.held = append(g.held, i)
}

// batch returns the group's write: its records queue by queue in the
// store's order, its metadata in log order, then the state op. It is
// valid until reset.
func (g *writeGroup) batch() *store.Batch {
	slices.SortFunc(g.queues, func(a, b store.QueueID) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Queue, b.Queue)
	})
	g.entries = g.entries[:0]
	for _, q := range g.queues {
		g.entries = append(g.entries, *g.runs[q]...)
	}
	meta := append(g.meta, store.MetaOp{Key: stateKey, Value: g.state.encode()})
	return &store.Batch{Entries: g.entries, Meta: meta}
}

// reset empties the group, keeping its buffers but none of the records
// and keys they pointed to (the Raft entries' data).
func (g *writeGroup) reset() {
	for _, q := range g.queues {
		run := g.runs[q]
		clear(*run)
		*run = (*run)[:0]
	}
	if len(g.runs) > 64 {
		clear(g.runs) // queues come and go: do not keep every one
	}
	g.queues = g.queues[:0]
	clear(g.entries)
	g.entries = g.entries[:0]
	clear(g.meta)
	g.meta = g.meta[:0]
	clear(g.next)
	g.held = g.held[:0]
	g.state, g.first, g.ops, g.bytes = fsmState{}, 0, 0, 0
}
