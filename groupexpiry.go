package equeue

import (
	"errors"
	"time"

	"github.com/equeue-go/equeue/store"
)

// runGroupExpiry deletes groups that had no live member for
// Options.GroupIdleTTL, until the engine closes. Idle times live in memory
// only: after a restart a group's idle time counts from Open.
func (e *Engine) runGroupExpiry() {
	every := min(max(e.opts.GroupIdleTTL/4, 10*time.Millisecond), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	idle := map[string]time.Time{}    // group -> idle since (see expireIdleGroups)
	gone := map[memberRef]time.Time{} // member ID -> absent since (see expireAbsentMembers)
	for {
		select {
		case <-e.closing:
			return
		case now := <-t.C:
			e.expireIdleGroups(now, idle)
			e.expireAbsentMembers(now, gone)
		}
	}
}

// memberRef names a member ID of a group.
type memberRef struct{ group, member string }

// expireAbsentMembers forgets, in broadcasting groups, the offsets of
// member IDs that had no live member for Options.GroupIdleTTL: gone
// records since when each absent ID is absent (its last leave, or the
// first check that found it absent when it left before Open). A broadcasting member
// keeps offsets of its own under its ID, so one that never comes back (a
// consumer started with a generated ID, the default, and restarted; a
// machine retired) would otherwise keep them in memory and in the store
// for good, and hold the group's reported lag (the slowest member's) at
// its own, ever growing.
func (e *Engine) expireAbsentMembers(now time.Time, gone map[memberRef]time.Time) {
	seen := map[memberRef]bool{}
	for _, g := range e.groups.snapshot() {
		g.mu.Lock()
		if g.model != Broadcasting { // set by the first member's join, under g.mu
			g.mu.Unlock()
			continue
		}
		absent := map[string]time.Time{} // ID -> when it last left (zero: not since Open)
		for k := range g.offsets {
			if _, live := g.members[k.member]; !live {
				absent[k.member] = g.left[k.member]
			}
		}
		for k := range g.starts { // a start kept, never stored (offset_resolvedstart.go)
			if _, live := g.members[k.member]; !live {
				absent[k.member] = g.left[k.member]
			}
		}
		for id, left := range g.left {
			if _, has := absent[id]; !has && now.Sub(left) >= e.opts.GroupIdleTTL {
				delete(g.left, id) // it committed nothing: nothing to delete
			}
		}
		g.mu.Unlock()
		for id, left := range absent {
			ref := memberRef{g.name, id}
			seen[ref] = true
			since, ok := gone[ref]
			if !ok {
				gone[ref] = now
				if !left.IsZero() {
					gone[ref] = left
				}
				continue
			}
			if left.After(since) {
				// It came back and left again since the last check.
				since = left
				gone[ref] = left
			}
			if now.Sub(since) < e.opts.GroupIdleTTL {
				continue
			}
			n, err := e.forgetMemberOffsets(g, id, now.Add(-e.opts.GroupIdleTTL))
			switch {
			case err == nil:
				if n > 0 {
					e.log.Info("offsets of an absent broadcasting member deleted", "group", g.name, "member", id, "queues", n, "absent", now.Sub(since))
				}
				delete(gone, ref)
			default:
				e.log.Warn("deleting an absent member's offsets; retried on the next check", "group", g.name, "member", id, "err", err)
			}
		}
	}
	for ref := range gone {
		if !seen[ref] {
			delete(gone, ref)
		}
	}
}

// forgetMemberOffsets deletes the offsets of member id of broadcasting
// group g, and forgets the starts kept for it, unless a member with that
// ID is live or left after before (then it does nothing). It returns how
// many offsets it deleted.
//
// g.mu is held to check and list, and to forget each chunk once its
// deletion is stored, not across the writes: the live members'
// heartbeats, which need no disk, do not wait for them (a member whose
// heartbeats waited for a hung disk would be expired once it came back).
// No send-back, commit, offset fetch, reset or deletion of g runs
// meanwhile (sbGate, commitMu), so none reads or sets the member's
// offsets; a join of the member's ID in between finds them going, as if
// it came just after the deletion.
func (e *Engine) forgetMemberOffsets(g *group, id string, before time.Time) (int, error) {
	if err := e.enter(e.bgCtx); err != nil {
		return 0, err
	}
	defer e.leave()
	if err := e.fenceSendBacks(e.bgCtx, g); err != nil {
		return 0, err
	}
	defer g.sbGate.unlock(false)
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	g.mu.Lock()
	if _, live := g.members[id]; live {
		g.mu.Unlock()
		return 0, nil
	}
	left, ok := g.left[id]
	if ok && left.After(before) {
		g.mu.Unlock()
		return 0, nil // it came and went since the caller looked
	}
	var keys [][]byte
	for k := range g.offsets {
		if k.member == id {
			keys = append(keys, offsetMetaKey(g.name, k))
		}
	}
	for k := range g.starts { // in memory only: nothing to delete in the store
		if k.member == id {
			delete(g.starts, k)
		}
	}
	// Its send-back marks go first; done counts the offsets.
	marks := g.markKeys(func(k offsetKey) bool { return k.member == id })
	g.mu.Unlock()
	keys = append(marks, keys...)
	done := -len(marks)
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), deleteChunk)]
		ops := make([]store.MetaOp, len(chunk))
		for i, k := range chunk {
			ops[i] = store.MetaOp{Key: k, Delete: true}
		}
		applied, err := e.storeMeta(ops...)
		if !applied {
			return max(done, 0), err
		}
		g.mu.Lock()
		g.forgetKeys(chunk)
		g.mu.Unlock()
		done += len(chunk)
		if err != nil {
			return max(done, 0), notDurable(err, "delete the offsets of member %q of group %q", id, g.name)
		}
		keys = keys[len(chunk):]
	}
	g.mu.Lock()
	if _, live := g.members[id]; !live && g.left[id].Equal(left) {
		delete(g.left, id) // unless it came back (and maybe left again) meanwhile
	}
	g.mu.Unlock()
	return done, nil
}

// expireIdleGroups updates idle with the groups that have no members (idle
// since the first check that found none, or their last member's leave
// when that is later) and deletes those idle for longer than
// Options.GroupIdleTTL.
func (e *Engine) expireIdleGroups(now time.Time, idle map[string]time.Time) {
	seen := map[string]bool{}
	for _, g := range e.groups.snapshot() {
		g.mu.Lock()
		empty, left := len(g.members) == 0, g.lastUsed
		g.mu.Unlock()
		seen[g.name] = true
		if !empty {
			delete(idle, g.name)
			continue
		}
		since, ok := idle[g.name]
		if !ok {
			idle[g.name] = now
			continue
		}
		if left.After(since) {
			// A member came and went since the last check: idle from then.
			since = left
			idle[g.name] = left
		}
		if now.Sub(since) < e.opts.GroupIdleTTL {
			continue
		}
		err := e.deleteGroup(e.bgCtx, g.name, false, since)
		switch {
		case err == nil || errors.Is(err, ErrGroupNotFound):
			e.log.Info("idle group deleted", "group", g.name, "idle", now.Sub(since))
			delete(idle, g.name)
		case errors.Is(err, ErrGroupHasMembers):
			delete(idle, g.name) // a member joined meanwhile
		default:
			e.log.Warn("deleting an idle group; retried on the next check", "group", g.name, "err", err)
		}
	}
	for name := range idle {
		if !seen[name] {
			delete(idle, name)
		}
	}
}
