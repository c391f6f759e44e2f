package equeue

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/equeue-go/equeue/store"
)

// Send-back marks: SendBack stores a failed message in the group's retry
// or dead-letter topic at most once per pulled message. With the copy it
// writes, in the same store write, a mark keyed by the group, the offset
// key (the queue, and the member in a broadcasting group) and the pulled
// message's offset. A SendBack that finds the mark stores nothing and
// answers with the first one's result (SendBackResult.Duplicate). That
// covers a process killed after the copy was stored and before the
// group's commit passed the message (the message is delivered again,
// fails again, and is sent back again), and a caller retrying a SendBack
// whose outcome it did not learn.
//
// A mark lives until the group's committed offset of its queue passes it:
// the commit that does deletes it in the same write. A reset of the
// group's offsets deletes every mark of the queues it moves (the operator
// asks for the messages to be handled again, failures included); deleting
// the group, its topic or a broadcasting member's offsets deletes them
// too. The marks of each group are held in its memory (group.sentBack),
// loaded when the engine opens.

var keySentBackPrefix = []byte("sbk/")

// sentBackMark is what a mark keeps: where the copy went.
type sentBackMark struct {
	dead     bool // %DLQ%<group>, not %RETRY%<group>
	attempts int
}

func sentBackKey(group string, k offsetKey, off int64) []byte {
	b := appendOffsetKey(slices.Clone(keySentBackPrefix), group, k)
	b = append(b, 0)
	return binary.BigEndian.AppendUint64(b, uint64(off))
}

// parseSentBackKey decodes a sentBackKey; false when it is malformed.
func parseSentBackKey(key []byte) (group string, k offsetKey, off int64, ok bool) {
	rest, found := bytes.CutPrefix(key, keySentBackPrefix)
	if !found || len(rest) < 9 || rest[len(rest)-9] != 0 {
		return "", offsetKey{}, 0, false
	}
	off = int64(binary.BigEndian.Uint64(rest[len(rest)-8:]))
	group, k, ok = parseOffsetKey(rest[:len(rest)-9])
	if !ok || off < 0 {
		return "", offsetKey{}, 0, false
	}
	return group, k, off, true
}

func sentBackValue(m sentBackMark) []byte {
	kind := byte(0)
	if m.dead {
		kind = 1
	}
	return binary.AppendUvarint([]byte{kind}, uint64(m.attempts))
}

func parseSentBackValue(v []byte) (sentBackMark, bool) {
	if len(v) < 2 || v[0] > 1 {
		return sentBackMark{}, false
	}
	n, used := binary.Uvarint(v[1:])
	if used <= 0 || 1+used != len(v) || n > 1<<31 {
		return sentBackMark{}, false
	}
	return sentBackMark{dead: v[0] == 1, attempts: int(n)}, true
}

// topic is the group's topic that holds the copy.
func (m sentBackMark) topic(group string) string {
	if m.dead {
		return DLQTopic(group)
	}
	return RetryTopic(group)
}

// claimSendBack returns ref's mark when it has one. Otherwise it claims
// ref for the caller, who must release it (releaseSendBack); a SendBack of
// ref already being written is waited for first.
func (g *group) claimSendBack(ctx context.Context, ref sentBackRef) (sentBackMark, bool, error) {
	for {
		g.sbMu.Lock()
		if m, ok := g.markOf(ref); ok {
			g.sbMu.Unlock()
			return m, true, nil
		}
		busy := g.sbPending[ref]
		if busy == nil {
			if g.sbPending == nil {
				g.sbPending = map[sentBackRef]chan struct{}{}
			}
			g.sbPending[ref] = make(chan struct{})
			g.sbMu.Unlock()
			return sentBackMark{}, false, nil
		}
		g.sbMu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return sentBackMark{}, false, ctx.Err()
		}
	}
}

// releaseSendBack ends the claim of ref, recording its mark when the
// write stored it (stored is not nil). It runs on the engine's writer
// when the claim's write completes, so it must not block.
func (g *group) releaseSendBack(ref sentBackRef, stored *sentBackMark) {
	g.sbMu.Lock()
	defer g.sbMu.Unlock()
	if stored != nil {
		g.setMark(ref, *stored)
	}
	if busy := g.sbPending[ref]; busy != nil {
		close(busy)
		delete(g.sbPending, ref)
	}
}

// sentBackRef names one pulled message of a group.
type sentBackRef struct {
	k   offsetKey
	off int64
}

// markOf returns the mark of ref, if any. g.sbMu must be held.
func (g *group) markOf(ref sentBackRef) (sentBackMark, bool) {
	m, ok := g.sentBack[ref.k][ref.off]
	return m, ok
}

// setMark records a mark in memory. g.sbMu must be held.
func (g *group) setMark(ref sentBackRef, m sentBackMark) {
	if g.sentBack == nil {
		g.sentBack = map[offsetKey]map[int64]sentBackMark{}
	}
	byOff := g.sentBack[ref.k]
	if byOff == nil {
		byOff = map[int64]sentBackMark{}
		g.sentBack[ref.k] = byOff
	}
	byOff[ref.off] = m
}

// forgetMark drops a mark from memory. g.sbMu must be held.
func (g *group) forgetMark(k offsetKey, off int64) {
	byOff := g.sentBack[k]
	delete(byOff, off)
	if len(byOff) == 0 {
		delete(g.sentBack, k)
	}
}

// marksBelow appends to ops the deletion of k's marks below off (all of
// them when off < 0) and returns the offsets of those marks, for
// forgetMarks once the write reached the store.
func (g *group) marksBelow(ops []store.MetaOp, k offsetKey, off int64) ([]store.MetaOp, []int64) {
	g.sbMu.Lock()
	defer g.sbMu.Unlock()
	var offs []int64
	for o := range g.sentBack[k] {
		if off < 0 || o < off {
			offs = append(offs, o)
			ops = append(ops, store.MetaOp{Key: sentBackKey(g.name, k, o), Delete: true})
		}
	}
	return ops, offs
}

// forgetMarks drops k's marks at offs from memory, after their deletion
// reached the store.
func (g *group) forgetMarks(k offsetKey, offs []int64) {
	if len(offs) == 0 {
		return
	}
	g.sbMu.Lock()
	defer g.sbMu.Unlock()
	for _, o := range offs {
		g.forgetMark(k, o)
	}
}

// markKeys returns the store keys of g's marks in memory whose offset key
// passes keep.
func (g *group) markKeys(keep func(offsetKey) bool) [][]byte {
	g.sbMu.Lock()
	defer g.sbMu.Unlock()
	var keys [][]byte
	for k, byOff := range g.sentBack {
		if keep(k) {
			for o := range byOff {
				keys = append(keys, sentBackKey(g.name, k, o))
			}
		}
	}
	return keys
}

// forgetMarkKeys drops from g's memory the marks among keys, which were
// deleted from the store.
func (g *group) forgetMarkKeys(keys [][]byte) {
	g.sbMu.Lock()
	defer g.sbMu.Unlock()
	for _, key := range keys {
		if name, k, off, ok := parseSentBackKey(key); ok && name == g.name {
			g.forgetMark(k, off)
		}
	}
}

// loadMarks restores the groups' marks when the engine opens.
func (c *coordinator) loadMarks() error {
	return c.e.st.ScanMeta(keySentBackPrefix, func(key, v []byte) error {
		name, k, off, good := parseSentBackKey(key)
		m, goodValue := parseSentBackValue(v)
		if !good || !goodValue {
			return fmt.Errorf("%w: send-back mark %q", ErrCorrupt, key)
		}
		g := c.groups[name]
		if g == nil {
			g = c.create(groupMeta{Name: name})
			c.groups[name] = g
		}
		g.sbMu.Lock()
		g.setMark(sentBackRef{k, off}, m)
		g.sbMu.Unlock()
		return nil
	})
}

// markKeysOf returns the store keys of every send-back mark of topic, in
// the store and in memory.
func (c *coordinator) markKeysOf(topic string) ([][]byte, error) {
	var keys keySet
	err := c.e.st.ScanMeta(keySentBackPrefix, func(key, _ []byte) error {
		if _, k, _, ok := parseSentBackKey(key); ok && k.q.Topic == topic {
			keys.add(key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, g := range c.snapshot() {
		for _, key := range g.markKeys(func(k offsetKey) bool { return k.q.Topic == topic }) {
			keys.add(key)
		}
	}
	return keys.keys, nil
}

// forgetMarksOf drops topic's marks from every group's memory, after they
// were deleted from the store.
func (c *coordinator) forgetMarksOf(topic string) {
	for _, g := range c.snapshot() {
		g.sbMu.Lock()
		for k := range g.sentBack {
			if k.q.Topic == topic {
				delete(g.sentBack, k)
			}
		}
		g.sbMu.Unlock()
	}
}
