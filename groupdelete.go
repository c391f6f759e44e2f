package equeue

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/equeue-go/equeue/store"
)

// ErrGroupHasMembers is returned by DeleteGroup when the group has live
// members and DeleteGroupOptions.Force is not set: nothing was deleted.
var ErrGroupHasMembers = errors.New("equeue: group has live members")

// DeleteGroupOptions configure DeleteGroup.
type DeleteGroupOptions struct {
	// Force deletes a group that has live members. They are removed from
	// the group at once: their pulls, commits and heartbeats are refused
	// (ErrFenced, ErrNotMember), and a consumer that joins again starts a
	// new group. False refuses with ErrGroupHasMembers.
	Force bool
}

// deleteChunk bounds the store operations of one write of DeleteGroup, so
// a group with many offsets never makes a batch too large for the store.
const deleteChunk = 512

// DeleteGroup deletes a consumer group and everything stored for it: its
// metadata, committed offsets (of every member, for a broadcasting group),
// the marks of redriven dead letters and of sent-back messages, pending
// delayed retries, and its %RETRY% and %DLQ% topics with their messages.
// It returns ErrGroupNotFound when nothing of the group exists, and
// ErrGroupHasMembers while members are live unless o.Force.
//
// A failed delete is resumable, not atomic: the group's keys go in writes
// of at most 512 operations with its metadata in the last, then its two
// topics are deleted one by one. After an error some of it may be gone
// (memory always matches the store); calling DeleteGroup again deletes the
// rest. When the error is ErrGroupHasMembers, nothing was changed.
//
// A group made again under the name (a member joins, or
// CommitGroupOffsets) starts as a new group does: a join or commit that
// comes after the group's keys are deleted, while its topics are, waits
// until they are gone (for a group the engine does not hold in memory,
// whose dead letters or retry topic alone are left, from the start of its
// deletion), and the new group grants under epochs above the deleted
// one's, so a removed member's commit under its old grant is refused
// (ErrFenced). A join under way when the deletion starts (it may have
// made the group's retry topic already) is waited for: the deletion then
// finds its member. A ctx that ends while the deletion waits for a redrive's
// send, a SendBack being queued or a join (the group's name gate) ends
// the wait: nothing is deleted, and the context's error is returned.
func (e *Engine) DeleteGroup(ctx context.Context, name string, o DeleteGroupOptions) error {
	return e.deleteGroup(ctx, name, o.Force, time.Time{})
}

// deleteGroup is DeleteGroup; with idleSince set (idle-group expiry) it
// refuses, with ErrGroupHasMembers, a group used after idleSince (a member
// came and went, or offsets were committed from outside, since the caller
// looked).
func (e *Engine) deleteGroup(ctx context.Context, name string, force bool, idleSince time.Time) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if err := ValidateName(name); err != nil {
		return err
	}
	// Redrives of the group while the engine does not hold it wait until
	// it is deleted, topics and all (groupdelete_gate.go).
	unfence, err := e.fenceGroupName(ctx, name)
	if err != nil {
		return fmt.Errorf("equeue: delete group %q: %w", name, err)
	}
	defer unfence()
	found, held, err := e.deleteGroupKeys(ctx, name, force, idleSince)
	// Until its topics are deleted too, the name is held: no group of it
	// is made again meanwhile (groupdelete_hold.go).
	defer e.groups.releaseName(name, held)
	if err != nil {
		return err
	}
	if h := e.groupTopicsHook.Load(); h != nil {
		(*h)(name)
	}
	for _, t := range []string{RetryTopic(name), DLQTopic(name)} {
		if _, ok := e.lookupTopic(t); !ok {
			continue
		}
		found = true
		// Not DeleteTopic: this deletion holds the name's gate already.
		if err := e.deleteTopic(ctx, t, nil); err != nil && !errors.Is(err, ErrTopicNotFound) {
			return fmt.Errorf("equeue: delete group %q: its keys are deleted, not yet all its topics (delete it again to finish): %w", name, err)
		}
	}
	if !found {
		return fmt.Errorf("%w: %q", ErrGroupNotFound, name)
	}
	e.log.Info("group deleted", "group", name, "force", force)
	return nil
}

// deleteGroupKeys deletes the group's stored keys and, once they are gone,
// the group from memory. found says whether there was anything; held,
// when not nil, is the hold on the name, for the caller to release once
// the group's topics are deleted (also when err is not nil). It is taken
// as the group leaves memory, or at once for a group the engine does not
// hold: nothing makes that group again while its keys and topics are
// deleted.
func (e *Engine) deleteGroupKeys(ctx context.Context, name string, force bool, idleSince time.Time) (found bool, held chan struct{}, err error) {
	c := e.groups
	c.mu.Lock()
	g := c.groups[name]
	if g == nil {
		held = c.holdName(name)
	}
	c.mu.Unlock()
	if g != nil {
		// Every send-back's mark is in the store before the keys are
		// listed, and none comes after: its member is gone by then.
		if err := e.fenceSendBacks(ctx, g); err != nil {
			return false, held, fmt.Errorf("equeue: delete group %q: %w", name, err)
		}
		defer g.sbGate.unlock(false)
		g.commitMu.Lock()
		defer g.commitMu.Unlock()
		g.mu.Lock()
		defer g.mu.Unlock()
		if !idleSince.IsZero() && g.lastUsed.After(idleSince) {
			return false, held, fmt.Errorf("%w: group %q was used since it was found idle", ErrGroupHasMembers, name)
		}
		if len(g.members) > 0 {
			if !force {
				return false, held, fmt.Errorf("%w: group %q has %d", ErrGroupHasMembers, name, len(g.members))
			}
			for id := range g.members {
				g.removeMember(id)
				e.log.Warn("group member fenced: its group is deleted", "group", name, "member", id)
			}
			g.owners = map[QueueRef]owner{}
			g.target = map[QueueRef]string{}
			g.epoch++
			g.notify()
		}
	}
	if g == nil {
		// Every redrive's mark is in the store before the keys are listed
		// (fenceGroupName), as every send-back's is above.
		if err := e.barrier(ctx); err != nil {
			return false, held, fmt.Errorf("equeue: delete group %q: %w", name, err)
		}
	}
	// Listings and heartbeats read g frozen across the store's reads and
	// writes (groupfreeze.go); its memory changes only between them.
	freeze, thaw := func() {}, func() {}
	if g != nil {
		freeze, thaw = g.freeze, g.thaw
	}
	freeze()
	keys, err := e.groupKeys(name)
	thaw()
	if err != nil {
		return false, held, fmt.Errorf("equeue: delete group %q: %w", name, err)
	}
	found = len(keys) > 0
	for len(keys) > 0 {
		n := min(len(keys), deleteChunk)
		chunk := keys[len(keys)-n:] // the metadata key is first: deleted last
		ops := make([]store.MetaOp, len(chunk))
		for i, k := range chunk {
			ops[i] = store.MetaOp{Key: k, Delete: true}
		}
		freeze()
		applied, werr := e.storeMeta(ops...)
		if applied {
			e.trimDelayed(chunk)
			e.forgetLostRedriven(chunk)
		}
		thaw()
		if !applied {
			return false, held, fmt.Errorf("equeue: delete group %q: %w", name, werr)
		}
		if g != nil {
			g.forgetKeys(chunk)
		}
		if werr != nil {
			return false, held, notDurable(werr, "delete group %q", name)
		}
		keys = keys[:len(keys)-n]
	}
	if g != nil {
		c.mu.Lock()
		if c.groups[name] == g {
			delete(c.groups, name)
			held = c.holdName(name)
			c.epochFloor = max(c.epochFloor, g.epoch, g.version, g.resetEpoch)
		}
		c.mu.Unlock()
		c.subscribers.remove(g)
		c.floors.remove(g)
	}
	return g != nil || found, held, nil
}

// trimDelayed deletes the delay-log records of the delay index keys among
// keys, which were just deleted, and unparks their messages. A failure
// leaves the records for the sweep on open, as a crash would.
func (e *Engine) trimDelayed(keys [][]byte) {
	for _, k := range keys {
		if _, seq, ok := parseDelayKey(k); ok && bytes.HasPrefix(k, keyDelayPrefix) && seq >= 0 {
			e.sched.unparkSlot(seq)
			if err := e.st.DeleteRange(delayLogID, uint64(seq), uint64(seq)+1); err != nil {
				e.log.Warn("trimming the delay log of a deleted group", "err", err)
			}
		}
	}
}

// groupKeys lists every stored key of group name other than its topics:
// the metadata key first (it must be deleted last), then offsets, redriven
// marks (those of its dead letters go with its dead-letter topic:
// redrivenKeysToDelete) and the delay index entries of its retry and
// dead-letter topics.
func (e *Engine) groupKeys(name string) ([][]byte, error) {
	var keys [][]byte
	meta := groupKey(name)
	if _, err := e.st.GetMeta(meta); err == nil || errors.Is(err, store.ErrDamaged) {
		keys = append(keys, meta)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	// Keys whose values the store cannot read back are deleted all the
	// same: their values are not needed.
	collect := func(prefix []byte) error {
		return e.scanMetaDamaged(prefix, func(k, _ []byte, _ error) error {
			keys = append(keys, slices.Clone(k))
			return nil
		})
	}
	if err := collect(append(append(slices.Clone(keyOffsetPrefix), name...), 0)); err != nil {
		return nil, err
	}
	marks, err := e.redrivenKeysToDelete(name)
	if err != nil {
		return nil, err
	}
	keys = append(keys, marks...)
	if err := collect(append(append(slices.Clone(keySentBackPrefix), name...), 0)); err != nil {
		return nil, err
	}
	var ids []uint32
	for _, t := range []string{RetryTopic(name), DLQTopic(name)} {
		if tp, ok := e.lookupTopic(t); ok {
			ids = append(ids, tp.id)
		}
	}
	if len(ids) > 0 {
		// An entry whose value cannot be read back, of no known topic, is
		// left for the scheduler to drop (and count) when it comes due.
		err := e.scanMetaDamaged(keyDelayPrefix, func(k, v []byte, damaged error) error {
			if damaged == nil && len(v) == delayIndexValueLen && slices.Contains(ids, binary.BigEndian.Uint32(v)) {
				keys = append(keys, slices.Clone(k))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// redrivenKeysToDelete lists the redriven marks of group name that its
// deletion deletes with its keys: all but those of the dead letters its
// dead-letter topic still holds. These go with that topic, after it
// (deleteRedrivenMarksOf): deleted before it, a failed delete of the topic
// or a crash in between would leave its dead letters to be redriven again.
func (e *Engine) redrivenKeysToDelete(name string) ([][]byte, error) {
	dlq, hasDLQ := e.lookupTopic(DLQTopic(name))
	var keys [][]byte
	// A lost mark (its value unreadable, v nil, or garbled) answers for
	// the dead-letter topic there, as one of the first format does
	// (redrivemark.go): it goes with that topic.
	err := e.scanMetaDamaged(redrivenGroupPrefix(name), func(k, v []byte, _ error) error {
		if hasDLQ {
			if live, err := redrivenIn(v, dlq.id); err == nil && live {
				return nil
			}
		}
		keys = append(keys, slices.Clone(k))
		return nil
	})
	return keys, err
}

// forgetKeys drops from g's memory the offsets and send-back marks whose
// keys were deleted. g.mu must be held.
func (g *group) forgetKeys(keys [][]byte) {
	g.forgetMarkKeys(keys)
	prefix := append(append(slices.Clone(keyOffsetPrefix), g.name...), 0)
	for _, k := range keys {
		if !bytes.HasPrefix(k, prefix) {
			continue
		}
		if _, ok, good := parseOffsetMetaKey(k); good {
			delete(g.offsets, ok)
			delete(g.attempts, ok)
			delete(g.starts, ok)
		}
	}
}

// remove drops g from the index (its group was deleted).
func (x *subscriberIndex) remove(g *group) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, t := range x.topics[g] {
		delete(x.byTopic[t], g)
		if len(x.byTopic[t]) == 0 {
			delete(x.byTopic, t)
		}
	}
	delete(x.topics, g)
}
