package equeue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"
)

// Claims on group names by a coordinator outside the engine: the Kafka
// listener (package kafka) coordinates its groups' membership itself and
// stores only their offsets here (CommitGroupOffsets). While such a group
// has live members its coordinator claims the name, so that no native
// consumer joins under it: its members' commits would then be refused
// (the group has native members) and new members could not join. Claims
// live in memory only: a coordinator renews its claims while its groups
// have members and releases them when they have none; a claim not renewed
// lapses.

// ErrGroupNameTaken is returned when a group name is another kind of
// group's: by JoinGroup while a coordinator outside the engine (the Kafka
// listener) claims the name for a group of its own with live members
// (ClaimGroup), and by ClaimGroup while a native consumer group has the
// name. Nothing was joined or claimed.
var ErrGroupNameTaken = errors.New("equeue: group name taken by another kind of group")

// ClaimGroup claims a group name for d for a group coordinated outside the
// engine (see CommitGroupOffsets) that has live members: until the claim
// lapses or is released, a native JoinGroup of that name is refused with
// ErrGroupNameTaken, and nothing of a native group is made. A call renews
// the claim (d from now); a d of zero or less releases it. The name need
// not be a group the engine knows (one that has not committed yet). It
// returns ErrInvalidName for a bad group name and ErrGroupNameTaken while
// a native consumer group has the name (it has members, or subscriptions
// its consumers made, which it keeps until it is deleted). Only memory
// changes: a claim is gone after a restart.
func (e *Engine) ClaimGroup(ctx context.Context, group string, d time.Duration) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if err := ValidateName(group); err != nil {
		return err
	}
	c := e.groups
	for {
		c.mu.Lock()
		g := c.groups[group]
		if g == nil || d <= 0 {
			c.setClaim(group, d)
			c.mu.Unlock()
			return nil
		}
		c.mu.Unlock()
		// Lock order: g.mu, then c.mu. A native join holds g.mu from its
		// check of the claims until its member is added.
		g.mu.Lock()
		c.mu.Lock()
		if c.groups[group] != g {
			c.mu.Unlock()
			g.mu.Unlock()
			continue
		}
		native := len(g.members) > 0 || len(g.subs) > 0
		if !native {
			c.setClaim(group, d)
		}
		c.mu.Unlock()
		g.mu.Unlock()
		if native {
			return fmt.Errorf("%w: %q is a native consumer group", ErrGroupNameTaken, group)
		}
		return nil
	}
}

// setClaim claims name until d from now, or releases it if d <= 0.
// c.mu must be held.
func (c *coordinator) setClaim(name string, d time.Duration) {
	if d <= 0 {
		delete(c.claims, name)
		return
	}
	now := time.Now()
	if c.claims == nil {
		c.claims = map[string]time.Time{}
	}
	if _, renewal := c.claims[name]; !renewal && len(c.claims) >= max(c.claimSweep, claimSweepAt) {
		// Claims that lapsed are otherwise forgotten only when their
		// name is looked up: a new name drops them here, so the map stays
		// within twice the claims live at the last walk (or claimSweepAt).
		// Only a new name walks the map, and only once it has doubled
		// since the last walk: renewals, which a coordinator makes for
		// each of its groups many times a second, cost no walk over every
		// claim.
		maps.DeleteFunc(c.claims, func(_ string, until time.Time) bool { return !now.Before(until) })
		c.claimSweep = 2 * len(c.claims)
	}
	c.claims[name] = now.Add(d)
}

// claimSweepAt is the number of claims at which a new claim first drops
// the lapsed ones, and the least at which it does again.
const claimSweepAt = 256

// claimed reports whether name is claimed (ClaimGroup), forgetting a claim
// that lapsed. c.mu must be held.
func (c *coordinator) claimed(name string, now time.Time) bool {
	until, ok := c.claims[name]
	if ok && !now.Before(until) {
		delete(c.claims, name)
		return false
	}
	return ok
}

// claimedErr is JoinGroup's error for a claimed name.
func claimedErr(name string) error {
	return fmt.Errorf("%w: %q is claimed by a group coordinated outside the engine (a Kafka group with live members)", ErrGroupNameTaken, name)
}
