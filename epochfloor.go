package equeue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/equeue-go/equeue/store"
)

// keyEpochFloor holds the epoch floor: every group epoch and assignment
// version an engine grants on the store is above it. Each open that grants
// anything raises it by epochSpan first, so that a grant made before a
// reopen is fenced off after it: without it a reopened engine started its
// groups' epochs at Options.EpochBase again, and a member that kept its ID
// across the reopen (a remote client across the server's restart) had its
// old grant pass the fence of the same epoch granted anew.
var keyEpochFloor = []byte("epochfloor")

// epochSpan is how many epochs one open of a store reserves: a group's
// epoch rises by one per membership or queue change, so no group comes
// near 2^32 changes in one open.
const epochSpan int64 = 1 << 32

// maxEpochBase is the highest Options.EpochBase: it leaves room for the
// span of the open and of a store an earlier version wrote (loadEpochFloor)
// below the int64 limit, so no epoch wraps round to a negative one.
const maxEpochBase = math.MaxInt64 - 2*epochSpan

// loadEpochFloor sets the epoch groups of this open start at, above
// Options.EpochBase and above every epoch an earlier open granted, and
// prepares the write that reserves this open's epochs (see reserveOp).
// A store without the floor key starts at Options.EpochBase, as before
// the key existed, unless it holds groups: those were written by a version
// that kept no floor, whose epochs stayed below epochSpan above the base.
func (c *coordinator) loadEpochFloor() error {
	base := c.e.opts.EpochBase
	v, err := c.e.st.GetMeta(keyEpochFloor)
	switch {
	case errors.Is(err, store.ErrNotFound):
		held, err := c.e.holdsGroups()
		if err != nil {
			return err
		}
		if held {
			base += epochSpan
		}
	case err != nil:
		return fmt.Errorf("equeue: read group epoch floor: %w", err)
	case len(v) != 8 || binary.BigEndian.Uint64(v) > math.MaxInt64-uint64(epochSpan):
		// A floor this near the limit takes 2^31 opens to reach: it
		// is taken as damage rather than wrapped round.
		return fmt.Errorf("%w: group epoch floor %x", ErrCorrupt, v)
	default:
		base = max(base, int64(binary.BigEndian.Uint64(v)))
	}
	c.epochFloor = base
	c.reservation = store.MetaOp{Key: keyEpochFloor, Value: binary.BigEndian.AppendUint64(nil, uint64(base+epochSpan))}
	return nil
}

// reserveOp returns the write that raises the stored epoch floor above
// every epoch this open may grant, or nothing once it is stored. The
// first join into each group of an open stores the group's configuration
// (JoinGroup), and nothing is granted before a member joins, so that
// write carries it: an open that grants nothing (a read-only command)
// writes nothing.
func (c *coordinator) reserveOp() []store.MetaOp {
	if c.reserved.Load() {
		return nil
	}
	return []store.MetaOp{c.reservation}
}

// holdsGroups reports whether the store holds a group's configuration or
// offsets.
func (e *Engine) holdsGroups() (bool, error) {
	held := false
	for _, p := range [][]byte{keyGroupPrefix, keyOffsetPrefix} {
		err := e.scanMetaDamaged(p, func(_, _ []byte, _ error) error {
			held = true
			return errStopScan
		})
		if err != nil && !errors.Is(err, errStopScan) {
			return false, fmt.Errorf("equeue: scan groups: %w", err)
		}
		if held {
			return true, nil
		}
	}
	return false, nil
}
