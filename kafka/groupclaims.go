package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/equeue-go/equeue"
)

// Claims on the names of the listener's groups in the engine: while a
// group (classic or KIP-848) has members, or a join of it is under way,
// the listener claims its name (equeue.Engine.ClaimGroup), so a native
// consumer cannot join under it. Taken, the name made the Kafka members'
// commits fail (the group had native members) and new Kafka members were
// refused. The coordinator's tick renews the claims of the groups that
// have members and releases the others; a join claims its group's name
// before it adds its member. The claims go when the listener closes.

// groupClaimer is the optional capability of claiming a group's name
// (equeue.Engine.ClaimGroup). Without it a native consumer may take the
// name of a Kafka group that has members.
type groupClaimer interface {
	ClaimGroup(ctx context.Context, group string, d time.Duration) error
}

// claimLease is how long a claim lasts unless renewed: the tick renews
// a claim once claimRenewEvery passed since it was made, so only a
// listener that stopped ticking (and did not close) lets its claims
// lapse.
const claimLease = 10 * time.Second

// claimRenewEvery is how old a claim gets before the tick renews it: a
// quarter of its lease, so that three renewals may fail before it
// lapses, without a call into the engine per group on every tick.
const claimRenewEvery = claimLease / 4

// claim claims group's name for a join, which calls done once its member
// was added (or it was refused): until then the tick does not release
// the claim. It returns GROUP_AUTHORIZATION_FAILED when a native consumer
// group has the name; any other failure to claim is logged and lets the
// join go on, as without the capability.
func (c *coordinator) claim(ctx context.Context, group string) (code int16, done func()) {
	gc, ok := c.s.b.(groupClaimer)
	if !ok {
		return errNone, func() {}
	}
	c.claimMu.Lock()
	defer c.claimMu.Unlock()
	c.mu.Lock()
	c.joining[group]++
	c.mu.Unlock()
	done = func() {
		c.mu.Lock()
		if c.joining[group]--; c.joining[group] <= 0 {
			delete(c.joining, group)
		}
		c.mu.Unlock()
	}
	err := gc.ClaimGroup(ctx, group, claimLease)
	switch {
	case errors.Is(err, equeue.ErrGroupNameTaken):
		done()
		return errGroupAuthorizationFailed, func() {}
	case err != nil:
		c.s.log.Debug("kafka: claiming a group's name", "group", group, "err", err)
	default:
		c.mu.Lock()
		c.claimed[group] = time.Now()
		c.mu.Unlock()
	}
	return errNone, done
}

// renewClaims renews the claims of the groups live (those with members,
// as tick returns them) and releases those of the groups that have none
// and no join under way.
func (c *coordinator) renewClaims(ctx context.Context, live []string) {
	gc, ok := c.s.b.(groupClaimer)
	if !ok {
		return
	}
	for _, name := range live {
		c.mu.Lock()
		last, held := c.claimed[name]
		c.mu.Unlock()
		if held && time.Since(last) < claimRenewEvery {
			continue
		}
		at := time.Now()
		err := gc.ClaimGroup(ctx, name, claimLease)
		switch {
		case err == nil:
			c.mu.Lock()
			c.claimed[name] = at
			c.mu.Unlock()
		case errors.Is(err, equeue.ErrGroupNameTaken):
			// A native group took the name while the claim was not
			// held (it lapsed, or could not be made): the members'
			// commits are refused until they leave.
			c.s.log.Warn("kafka: a native consumer group has the name of a group with members", "group", name)
		case ctx.Err() == nil:
			c.s.log.Debug("kafka: claiming a group's name", "group", name, "err", err)
		}
	}
	keep := make(map[string]bool, len(live))
	for _, name := range live {
		keep[name] = true
	}
	c.claimMu.Lock()
	defer c.claimMu.Unlock()
	c.mu.Lock()
	var release []string
	for name := range c.claimed {
		if !keep[name] && c.joining[name] == 0 {
			release = append(release, name)
			delete(c.claimed, name)
		}
	}
	c.mu.Unlock()
	for _, name := range release {
		if err := gc.ClaimGroup(ctx, name, 0); err != nil && ctx.Err() == nil {
			c.s.log.Debug("kafka: releasing a group's name", "group", name, "err", err)
		}
	}
}

// releaseClaims releases every claim, when the listener closes.
func (c *coordinator) releaseClaims() {
	gc, ok := c.s.b.(groupClaimer)
	if !ok {
		return
	}
	c.claimMu.Lock()
	defer c.claimMu.Unlock()
	c.mu.Lock()
	names := make([]string, 0, len(c.claimed))
	for name := range c.claimed {
		names = append(names, name)
	}
	clear(c.claimed)
	c.mu.Unlock()
	for _, name := range names {
		_ = gc.ClaimGroup(context.Background(), name, 0)
	}
}
