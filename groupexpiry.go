package equeue

import (
	"errors"
	"time"
)

// runGroupExpiry deletes groups that had no live member for
// Options.GroupIdleTTL, until the engine closes. Idle times live in memory
// only: after a restart a group's idle time counts from Open.
func (e *Engine) runGroupExpiry() {
	every := min(max(e.opts.GroupIdleTTL/4, 10*time.Millisecond), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	idle := map[string]time.Time{} // group -> first seen without members
	for {
		select {
		case <-e.closing:
			return
		case now := <-t.C:
			e.expireIdleGroups(now, idle)
		}
	}
}

// expireIdleGroups updates idle with the groups that have no members and
// deletes those idle for longer than Options.GroupIdleTTL.
func (e *Engine) expireIdleGroups(now time.Time, idle map[string]time.Time) {
	seen := map[string]bool{}
	for _, g := range e.groups.snapshot() {
		g.mu.Lock()
		empty := len(g.members) == 0
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
		if now.Sub(since) < e.opts.GroupIdleTTL {
			continue
		}
		err := e.DeleteGroup(e.bgCtx, g.name, DeleteGroupOptions{})
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
