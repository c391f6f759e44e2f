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
// A mark answers only while it can name the message it was written for
// and its copy is where it went: it keeps the IDs of the incarnations of
// its message's topic and of the topic holding the copy (a topic deleted
// and created again under its name has another), and one below the
// group's committed offset is dead (the commit passed its message).
// Deleting marks is therefore tidying, never what makes an answer right,
// with one exception: a reset of the group's offsets, and a commit that
// moves one back, delete every mark of the queues they move (their
// messages are to be handled again, failures included), as many as fit
// in their own write and the rest in writes before it: one that fails
// moves nothing and leaves no live mark. Their write makes room for the
// marks live before it first, so that the writes before it delete dead
// marks (planMarks): one the store refuses leaves the live marks. A
// commit deletes the marks it passes, as many as fit in its write and
// the rest after it (they are dead already); deleting the topic, the group or a broadcasting member's
// offsets deletes theirs. A reset, a commit moving back, a group's
// deletion and a member's expiry first wait for the send-backs being
// queued (group.sbGate) and written (a barrier), so none of their marks
// lands after them. The marks of each group are held in its memory
// (group.sentBack), loaded when the engine opens.

var keySentBackPrefix = []byte("sbk/")

// sentBackMark is what a mark keeps: where the copy went, and the
// incarnations of the topic its message was pulled from and of the topic
// holding the copy.
type sentBackMark struct {
	dead     bool // %DLQ%<group>, not %RETRY%<group>
	attempts int
	topicID  uint32
	copyID   uint32 // the incarnation of the topic holding the copy
}

// markDeletesPerWrite bounds the marks a commit deletes in its own write;
// it deletes the rest in writes of as many after it.
const markDeletesPerWrite = 512

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
	b := binary.BigEndian.AppendUint32([]byte{kind}, m.topicID)
	b = binary.BigEndian.AppendUint32(b, m.copyID)
	return binary.AppendUvarint(b, uint64(m.attempts))
}

func parseSentBackValue(v []byte) (sentBackMark, bool) {
	if len(v) < 10 || v[0] > 1 {
		return sentBackMark{}, false
	}
	n, used := binary.Uvarint(v[9:])
	if used <= 0 || 9+used != len(v) || n > 1<<31 {
		return sentBackMark{}, false
	}
	return sentBackMark{dead: v[0] == 1, topicID: binary.BigEndian.Uint32(v[1:5]), copyID: binary.BigEndian.Uint32(v[5:9]), attempts: int(n)}, true
}

// copyTopics are the incarnations of a group's retry and dead-letter
// topics (0: none).
type copyTopics struct{ retry, dlq uint32 }

// holds reports whether the topic m's copy went to is still the one it
// was written to.
func (c copyTopics) holds(m sentBackMark) bool {
	id := c.retry
	if m.dead {
		id = c.dlq
	}
	return id != 0 && id == m.copyID
}

// topic is the group's topic that holds the copy.
func (m sentBackMark) topic(group string) string {
	if m.dead {
		return DLQTopic(group)
	}
	return RetryTopic(group)
}

// claimSendBack returns ref's mark when it has one that names the
// message pulled from topic incarnation topicID, with the group's
// committed offset of the queue at committed (-1: none), and whose copy's
// topic is still the one copies returns. Otherwise it
// claims ref for the caller, who must release it (releaseSendBack); a
// SendBack of ref already being written is waited for first.
func (g *group) claimSendBack(ctx context.Context, ref sentBackRef, topicID uint32, committed int64, copies func() copyTopics) (sentBackMark, bool, error) {
	for {
		g.sbMu.Lock()
		// Read under sbMu: a mark recorded implies its copy's topic was
		// published before, so ids read now are not older than the mark.
		if m, ok := g.markOf(ref); ok && m.topicID == topicID && ref.off >= committed && copies().holds(m) {
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

// marksBelow returns the offsets of k's marks below off (all of them
// when off < 0), in order.
func (g *group) marksBelow(k offsetKey, off int64) []int64 {
	g.sbMu.Lock()
	var offs []int64
	for o := range g.sentBack[k] {
		if off < 0 || o < off {
			offs = append(offs, o)
		}
	}
	g.sbMu.Unlock()
	slices.Sort(offs)
	return offs
}

// marksPassed returns the offsets of k's marks that a commit of off
// deletes: those below it, or all of them when it moves k's committed
// offset back (its messages are to be handled again, as after a reset).
// g.mu must be held.
func (g *group) marksPassed(k offsetKey, off int64) []int64 {
	if cur, ok := g.offsets[k]; ok && off < cur {
		return g.marksBelow(k, -1)
	}
	return g.marksBelow(k, off)
}

// markDeletes appends to ops the deletion of k's marks at offs.
func (g *group) markDeletes(ops []store.MetaOp, k offsetKey, offs []int64) []store.MetaOp {
	for _, o := range offs {
		ops = append(ops, store.MetaOp{Key: sentBackKey(g.name, k, o), Delete: true})
	}
	return ops
}

// deleteMarks deletes k's marks at offs from the store, in writes of
// markDeletesPerWrite, and from memory as each write lands.
func (e *Engine) deleteMarks(g *group, k offsetKey, offs []int64) error {
	for len(offs) > 0 {
		chunk := offs[:min(len(offs), markDeletesPerWrite)]
		applied, err := e.storeMeta(g.markDeletes(nil, k, chunk)...)
		if !applied {
			return err
		}
		g.forgetMarks(k, chunk)
		if err != nil {
			return err
		}
		offs = offs[len(chunk):]
	}
	return nil
}

// deleteMarksAfter deletes the marks a commit passed and left for writes
// after its own (offsetSet.later). They are dead already (below the
// committed offset): a failure only leaves them for the next commit.
func (e *Engine) deleteMarksAfter(g *group, set []offsetSet) {
	for _, s := range set {
		if err := e.deleteDeadMarks(g, s.k, s.later); err != nil {
			e.log.Warn("deleting send-back marks a commit passed; the next commit tries again", "group", g.name, "queue", s.k.q, "marks", len(s.later), "err", err)
			return
		}
	}
}

// deleteDeadMarks deletes, chunk by chunk under g.commitMu, those of
// k's marks at offs still below k's committed offset: a reset or a commit
// moving the offset back since may have made a new mark at one of them live.
func (e *Engine) deleteDeadMarks(g *group, k offsetKey, offs []int64) error {
	for len(offs) > 0 {
		chunk := offs[:min(len(offs), markDeletesPerWrite)]
		offs = offs[len(chunk):]
		g.commitMu.Lock()
		g.mu.Lock()
		cur, ok := g.offsets[k]
		g.mu.Unlock()
		dead := slices.DeleteFunc(slices.Clone(chunk), func(o int64) bool { return !ok || o >= cur })
		err := e.deleteMarks(g, k, dead)
		g.commitMu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// fenceSendBacks waits until no SendBack of g is being queued (the caller
// then holds g.sbGate, which keeps new ones out until it unlocks it:
// g.sbGate.unlock(false)) and
// every one queued before is written, so that their marks are in the
// store and in g's memory. That includes the write of one whose caller
// gave up on its context while the write was queued or being written:
// the call released the gate as it returned, but its write was queued
// under it, so before the barrier, which the writer completes after it
// (TestDeleteGroup_WaitsForTheWriteOfAGivenUpSendBack). A redrive's
// copy and mark are queued under the gate as well (redriveOne).
func (e *Engine) fenceSendBacks(ctx context.Context, g *group) error {
	if err := g.sbGate.lock(ctx, false, nil); err != nil {
		return err
	}
	if err := e.barrier(ctx); err != nil {
		g.sbGate.unlock(false)
		return err
	}
	return nil
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

// loadMarks restores the groups' marks when the engine opens. A mark
// whose value the store cannot read back, or whose key or value is
// garbled, is lost: it can no longer answer a second SendBack of its
// message, which is sent back again (a second copy) if it fails again
// before the group's commit passes it. Open drops it, logged and counted
// in Stats().CorruptRecords, and deletes it so that a later open does not
// meet it again (a store that refuses the write keeps it until one that
// writes). Failing instead kept the engine from opening at all.
func (c *coordinator) loadMarks() error {
	var lost []store.MetaOp
	err := c.e.scanMetaDamaged(keySentBackPrefix, func(key, v []byte, damaged error) error {
		name, k, off, good := parseSentBackKey(key)
		m, goodValue := parseSentBackValue(v)
		if damaged == nil && (!good || !goodValue) {
			damaged = fmt.Errorf("%w: send-back mark %q", ErrCorrupt, key)
		}
		if damaged != nil {
			c.e.stats.corrupt.Add(1)
			c.e.log.Error("send-back mark lost: its message is sent back again if it fails again",
				"key", fmt.Sprintf("%q", key), "err", damaged)
			lost = append(lost, store.MetaOp{Key: slices.Clone(key), Delete: true})
			return nil
		}
		g := c.loaded(name)
		g.sbMu.Lock()
		g.setMark(sentBackRef{k, off}, m)
		g.sbMu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	if err := c.e.writeMetaAtOpen(lost); err != nil {
		c.e.log.Warn("deleting lost send-back marks; the next open tries again", "marks", len(lost), "err", err)
	}
	return nil
}

// markKeysOf returns the store keys of the send-back marks of topic that
// memory holds. Memory holds every mark that can answer: it loads them
// all, records each one the writer stored, and forgets one only once its
// deletion reached the store or the mark is dead. (The store may keep a
// mark memory lacks: one of a send-back of unknown outcome, after which
// the engine writes nothing more until it is opened again, which loads
// it; or one of a deleted topic's incarnation, which answers for no other.)
func (c *coordinator) markKeysOf(topic string) [][]byte {
	var keys [][]byte
	for _, g := range c.snapshot() {
		keys = append(keys, g.markKeys(func(k offsetKey) bool { return k.q.Topic == topic })...)
	}
	return keys
}

// deleteMarksOf deletes the send-back marks of a deleted topic, in writes
// of deleteChunk. They name its incarnation, so those a failure leaves
// answer for no later topic of the name; the groups' commits delete them.
func (e *Engine) deleteMarksOf(topic string) {
	keys := e.groups.markKeysOf(topic)
	err := e.deleteKeys(keys)
	if err != nil {
		e.log.Warn("deleting the send-back marks of a deleted topic", "topic", topic, "err", err)
		return
	}
	for _, g := range e.groups.snapshot() {
		g.forgetMarkKeys(keys)
	}
}

// deleteKeys deletes the metadata keys, through the writer, in writes of
// deleteChunk; it stops at the first that fails.
func (e *Engine) deleteKeys(keys [][]byte) error {
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), deleteChunk)]
		ops := make([]store.MetaOp, len(chunk))
		for i, k := range chunk {
			ops[i] = store.MetaOp{Key: k, Delete: true}
		}
		if err := e.writeMeta(ops...); err != nil {
			return err
		}
		keys = keys[len(chunk):]
	}
	return nil
}
