package equeue

import (
	"errors"
)

// Priority over a remote broker. In process, an append to an idle (parked)
// lane marks it busy as it resumes the lane's runner (park.go), so a lower
// lane hands out nothing while the higher lane's pull is under way. Over
// the network an idle lane's runner long-polls instead, and nothing marks
// the lane busy before the long-poll's answer reaches the consumer: each
// lane's answer travels on its own, and the lower lane's may come first.
// So before a runner hands out the first message of a pull of a lower lane
// over a remote broker, it asks the broker, without waiting, whether each
// idle higher lane of the queue has messages its filter takes beyond what
// its runner pulled, and waits while one has (its runner's long-poll
// brings them, which marks the lane busy). A higher-lane message stored
// before the lower lane's pull returned is therefore handed out first, as
// in process; one stored after that may go after the rest of that pull's
// messages, once its long-poll's answer arrived.

// laneAt is an idle lane of a queue and the offset its runner pulls next.
type laneAt struct {
	lane int
	next int64
}

// probeMark is how far a runner's reads of a higher lane went without
// finding a message its filter takes: every record of [from, to) is one a
// pull skips (rejected by the filter, expired, failing its checksum, or
// gone), and stays so. A later read of the lane from an offset in that
// range goes on from to, so records the runner's reads passed once are
// not read again at each pull while the lane's own runner stands before
// them (its answer slow to come back, or its process queue full).
type probeMark struct {
	from, to int64
}

// probeHigher reports whether one of the idle higher lanes of the runner's
// queue has messages beyond its next offset, reading each with a pull that
// does not wait (nor counts anything for the group: it names none). A
// lane whose read moved past rejected, expired or vanished records without
// finding any is read on from there, and a later probe starts past them
// (probeMark). A read that fails says nothing: the lane is taken as empty
// rather than holding the lower lane back.
func (r *runner) probeHigher(idle []laneAt) bool {
	n := r.c.laneCount(r.grant.Topic)
	for _, l := range idle {
		off, from := l.next, l.next
		if m, ok := r.probed[l.lane]; ok && m.from <= off && off < m.to {
			off, from = m.to, m.from
		}
		for r.ctx.Err() == nil {
			res, err := r.c.b.Pull(r.ctx, &PullRequest{Topic: r.grant.Topic, Queue: r.lane.key.queue*n + l.lane,
				Offset: off, Max: 1, Filter: r.filter})
			if err != nil {
				if r.ctx.Err() == nil && !errors.Is(err, ErrClosed) {
					r.c.log.Debug("probing a higher lane failed", "topic", r.grant.Topic, "lane", l.lane, "err", err)
				}
				break
			}
			if len(res.Messages) > 0 {
				return true
			}
			if res.NextOffset > off {
				if r.probed == nil {
					r.probed = make(map[int]probeMark)
				}
				r.probed[l.lane] = probeMark{from: from, to: res.NextOffset}
			}
			if res.NextOffset <= off || res.NextOffset >= res.MaxOffset {
				break
			}
			off = res.NextOffset
		}
	}
	return r.ctx.Err() != nil
}
