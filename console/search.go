package console

import (
	"context"
	"slices"
	"time"

	"github.com/equeue-go/equeue"
)

// scanReport says what a bounded search read of each queue.
type scanReport struct {
	Queue    int
	From, To int64 // offsets read: [From, To)
	Older    bool  // messages below From were not read
}

// maxMatches bounds how many matches a search returns.
const maxMatches = 100

// search reads the newest messages of each queue of t, up to the scan
// limit shared among the queues, and returns those match accepts as rows
// that keep only the head of each body (listed). A message the broker
// cannot answer (pullList) is returned as a row too, marked TooLarge: it
// was not searched, and the result is not complete.
func (c *Console) search(ctx context.Context, t equeue.TopicInfo, match func(*equeue.Message) bool) (found []messageRow, report []scanReport, complete bool, err error) {
	complete = true
	if len(t.Queues) == 0 {
		return nil, nil, true, nil
	}
	per := max(int64(c.o.ScanLimit/len(t.Queues)), 1)
	for _, q := range t.Queues {
		from := max(q.MinOffset, q.MaxOffset-per)
		rep := scanReport{Queue: q.ID, From: from, To: from, Older: from > q.MinOffset}
		off := from
		for off < q.MaxOffset && len(found) < maxMatches {
			res, err := c.pullList(ctx, equeue.PullRequest{Topic: t.Name, Queue: q.ID, Offset: off, Max: int(min(q.MaxOffset-off, 1024))})
			if err != nil {
				return nil, nil, false, err
			}
			next := res.NextOffset
			if res.TooLarge >= 0 && res.TooLarge < q.MaxOffset {
				// It may match: list it, as not searched.
				found = append(found, tooLargeRow(t.Name, q.ID, res.TooLarge))
				complete = false
			}
			for _, m := range res.Messages {
				if len(found) == maxMatches {
					next = m.Offset // read no further than the last match kept
					break
				}
				if m.Offset < q.MaxOffset && match(m) {
					found = append(found, listed(m))
				}
			}
			if next <= off {
				break
			}
			off = next
		}
		rep.To = min(off, q.MaxOffset)
		if rep.Older || rep.To < q.MaxOffset {
			complete = false
		}
		report = append(report, rep)
		if len(found) >= maxMatches {
			complete = false
			break
		}
	}
	slices.SortFunc(found, func(a, b messageRow) int { return b.M.StoredAt.Compare(a.M.StoredAt) })
	return found, report, complete, nil
}

// offsetAt finds the first offset of queue q stored at or after at, by
// binary search over single-message pulls: O(log n) reads. The time of a
// message the broker cannot answer (a remote client's MaxMessageBytes) is
// not known: it is taken as that of the next message that can be read
// (timedFrom), so that such messages just before the first one stored at
// or after at are listed too.
func (c *Console) offsetAt(ctx context.Context, topic string, q equeue.QueueInfo, at time.Time) (int64, error) {
	lo, hi := q.MinOffset, q.MaxOffset
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, err := c.timedFrom(ctx, topic, q.ID, mid, hi)
		if err != nil {
			return 0, err
		}
		if m == nil {
			hi = mid // nothing readable from mid on
			continue
		}
		if m.StoredAt.Before(at) {
			lo = max(m.Offset, mid) + 1
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// maxTooLargeSkips bounds how many messages in a row timedFrom passes
// because the broker cannot answer them.
const maxTooLargeSkips = 64

// timedFrom reads the first message of queue q from offset from, passing
// messages the broker cannot answer within the client's receive limit. It
// returns nil when there is none, or none before offset to after such
// messages (or after maxTooLargeSkips of them: their times are not known).
func (c *Console) timedFrom(ctx context.Context, topic string, q int, from, to int64) (*equeue.Message, error) {
	off := from
	for range maxTooLargeSkips + 1 {
		res, err := c.b.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: q, Offset: off, Max: 1})
		big := tooLarge(err, off)
		switch {
		case big != nil && big.Offset+1 < to:
			off = big.Offset + 1
			continue
		case big != nil:
			return nil, nil
		case err != nil || len(res.Messages) == 0:
			return nil, err
		}
		return res.Messages[0], nil
	}
	return nil, nil
}
