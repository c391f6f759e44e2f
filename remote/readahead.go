package remote

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/equeue-go/equeue"
)

// readAhead serves the long-poll pulls of consumers (group pulls with a
// wait) from answers fetched ahead. A consumer pulls each queue it owns one
// batch at a time and pulls again only after it handed the batch to its
// handlers; over the network every such pull would be a round trip and an
// RPC for a few messages. Instead, a pull that finds messages asks the
// broker for up to ClientOptions.PullAhead of them, hands out the batch
// the consumer asked for and keeps the rest for the queue's next pulls; while
// the queue has more, the next fetch is already under way when the kept
// messages run low. Reading ahead only reads: what it keeps is what a
// pull made a moment earlier would have returned (a pull that would hand
// out a kept message that expired since asks the broker, see
// expiredWithin), nothing is committed before the consumer handled it,
// and a pull at another offset or epoch
// (a consumer that moved, was fenced or was given the queue again) drops
// what was kept and asks the broker. A queue whose pulls stop (revoked,
// consumer closed) has its kept messages dropped after aheadIdle, and a
// topic the client learns was deleted (its DeleteTopic, or a pull or fetch
// answered ErrTopicNotFound) has its kept messages dropped at once.
type readAhead struct {
	c      *Client
	ahead  int // messages per fetch; below 2 reading ahead is off
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	queues map[aheadKey]*aheadQueue
	swept  time.Time
	// drops counts dropTopic's drops: a pull whose answer comes back after
	// one keeps nothing of it (it may be of the topic dropped).
	drops uint64
}

// aheadKey names one consumer's view of one queue.
type aheadKey struct {
	group, member, topic, filter string
	queue                        int32
}

// aheadQueue is what was read ahead of one queue. Guarded by readAhead.mu.
type aheadQueue struct {
	epoch int64
	// next is the offset the kept messages start at: the offset the
	// consumer's next pull asks for when it follows on.
	next int64
	msgs []*equeue.Message
	// tail is the last answer kept (its NextOffset follows msgs); expired,
	// deleted (retry copies of deleted topics) and corrupt count records
	// skipped, reported with the next batch.
	tail     equeue.PullResult
	expired  int
	deleted  int
	corrupt  []int64
	fetching bool
	fetchAt  int64         // the offset the fetch in flight starts at
	fetched  chan struct{} // closed when that fetch ends
	used     time.Time
	keptAt   time.Time // when the oldest kept message was read
}

// aheadFresh is how long kept messages may be handed out after they were
// read: a pull served later asks the broker again, so what a consumer gets
// is never older than that (its grant may have moved on meanwhile).
const aheadFresh = time.Second

// aheadIdle is how long the messages kept for a queue whose consumer no
// longer pulls it stay in memory.
const aheadIdle = 30 * time.Second

func newReadAhead(c *Client, ahead int) *readAhead {
	ctx, cancel := context.WithCancel(context.Background())
	return &readAhead{c: c, ahead: ahead, ctx: ctx, cancel: cancel, queues: map[aheadKey]*aheadQueue{}}
}

// close ends the fetches in flight and waits for them. Idempotent.
func (ra *readAhead) close() {
	ra.cancel()
	ra.wg.Wait()
}

// enabled reports whether req, a consumer's pull, is served here. A pull
// whose Max the engine refuses (negative, or above equeue.MaxPullBatch)
// goes to the broker as it is, to be refused as in-process, and so does
// one with a MaxBytes bound, which a read-ahead batch would not keep.
func (ra *readAhead) enabled(req *equeue.PullRequest) bool {
	return ra.ahead >= 2 && req.Wait > 0 && req.Group != "" && req.Max >= 0 && req.Max <= equeue.MaxPullBatch && req.MaxBytes == 0
}

// pull answers req, a consumer's long-poll.
func (ra *readAhead) pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	key := aheadKey{group: req.Group, member: req.Member, topic: req.Topic, filter: req.Filter, queue: toInt32(req.Queue)}
	want := req.Max
	if want == 0 {
		want = equeue.DefaultPullBatch
	}
	var drops uint64
	for {
		ra.mu.Lock()
		q := ra.queue(key, req.Epoch)
		if len(q.msgs) > 0 && q.next == req.Offset && time.Since(q.keptAt) < aheadFresh && !expiredWithin(q.msgs, want) {
			res := ra.take(key, q, want)
			ra.mu.Unlock()
			return res, nil
		}
		if q.fetching && q.fetchAt == req.Offset && len(q.msgs) == 0 {
			ch := q.fetched
			ra.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return equeue.PullResult{}, ctx.Err()
			}
		}
		// Not what was read ahead: start over from the broker.
		q.msgs, q.expired, q.deleted, q.corrupt = nil, 0, 0, nil
		drops = ra.drops
		ra.mu.Unlock()
		break
	}
	fetch := max(want, ra.ahead)
	res, err := ra.c.pullCall(ctx, ra.c.pullPB(req, fetch, 0))
	if err == nil && idleAnswer(res, req.Offset) {
		// At the end of the queue: wait with the client's other pulls,
		// bounded from now on.
		res, err = ra.c.waitPull(ctx, ra.c.pullPB(req, fetch, req.Wait))
	}
	if err != nil {
		ra.forgetIfDeleted(key.topic, err)
		return equeue.PullResult{}, err
	}
	if res.Status != equeue.PullFound {
		return res, nil
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if ra.drops != drops {
		// A topic was dropped while the answer was on its way (the client
		// deleted it, say): the answer stands for this pull, made before,
		// but what it holds beyond the batch asked for is not kept.
		if len(res.Messages) > want {
			res.Messages = res.Messages[:want:want]
			res.NextOffset = res.Messages[want-1].Offset + 1
		}
		return res, nil
	}
	q := ra.queue(key, req.Epoch)
	q.next, q.msgs, q.tail, q.keptAt = req.Offset, res.Messages, res, time.Now()
	q.expired, q.deleted, q.corrupt = res.Expired, res.DeletedTopicRetries, res.Corrupt
	q.tail.Messages, q.tail.Expired, q.tail.DeletedTopicRetries, q.tail.Corrupt = nil, 0, 0, nil
	return ra.take(key, q, want), nil
}

// queue returns the read-ahead state of key under epoch, new when there
// is none or it belongs to another epoch. Called with ra.mu held.
func (ra *readAhead) queue(key aheadKey, epoch int64) *aheadQueue {
	now := time.Now()
	q := ra.queues[key]
	if q == nil || q.epoch != epoch {
		if now.Sub(ra.swept) > aheadIdle {
			ra.swept = now
			for k, old := range ra.queues {
				if now.Sub(old.used) > aheadIdle {
					delete(ra.queues, k)
				}
			}
		}
		q = &aheadQueue{epoch: epoch}
		ra.queues[key] = q
	}
	q.used = now
	return q
}

// take hands out up to want kept messages of q, and starts the next fetch
// when few are left and the queue has more. Called with ra.mu held.
func (ra *readAhead) take(key aheadKey, q *aheadQueue, want int) equeue.PullResult {
	k := min(want, len(q.msgs))
	res := q.tail
	res.Messages = q.msgs[:k:k]
	res.Expired, res.DeletedTopicRetries, res.Corrupt = q.expired, q.deleted, q.corrupt
	q.expired, q.deleted, q.corrupt = 0, 0, nil
	if k < len(q.msgs) {
		res.NextOffset = res.Messages[k-1].Offset + 1
		q.msgs = q.msgs[k:]
	} else {
		q.msgs = nil
	}
	q.next = res.NextOffset
	if len(q.msgs) < ra.ahead/2 {
		ra.fetch(key, q)
	}
	return res
}

// fetch reads ahead of q's last answer when the queue has more and no
// fetch is in flight. Called with ra.mu held.
func (ra *readAhead) fetch(key aheadKey, q *aheadQueue) {
	if q.fetching || q.tail.Status != equeue.PullFound || q.tail.NextOffset >= q.tail.MaxOffset || ra.ctx.Err() != nil {
		return
	}
	at := q.tail.NextOffset
	in := ra.c.pullPB(&equeue.PullRequest{Topic: key.topic, Queue: int(key.queue), Offset: at, Filter: key.filter,
		Group: key.group, Member: key.member, Epoch: q.epoch}, ra.ahead, 0)
	q.fetching, q.fetchAt, q.fetched = true, at, make(chan struct{})
	ra.wg.Add(1)
	go func() {
		defer ra.wg.Done()
		ctx, cancel := context.WithTimeout(ra.ctx, ra.c.pollSlack())
		sent := time.Now()
		res, err := ra.c.pullDirect(ctx, in)
		cancel()
		ra.mu.Lock()
		defer ra.mu.Unlock()
		q.fetching = false
		close(q.fetched)
		if ra.queues[key] != q {
			return
		}
		if errors.Is(err, equeue.ErrTopicNotFound) {
			ra.dropTopicLocked(key.topic)
			return
		}
		// Keep only a clean continuation; anything else (an error, a moved
		// offset) the consumer's own next pull finds out for itself.
		if err != nil || res.Status != equeue.PullFound || len(res.Messages) == 0 || q.tail.NextOffset != at {
			return
		}
		if len(q.msgs) == 0 {
			q.next, q.keptAt = at, sent
		}
		q.msgs = append(q.msgs, res.Messages...)
		q.expired += res.Expired
		q.deleted += res.DeletedTopicRetries
		q.corrupt = append(q.corrupt, res.Corrupt...)
		q.tail = res
		q.tail.Messages, q.tail.Expired, q.tail.DeletedTopicRetries, q.tail.Corrupt = nil, 0, 0, nil
	}()
}

// forgetIfDeleted drops what was read ahead of topic when err says the
// topic does not exist (any longer).
func (ra *readAhead) forgetIfDeleted(topic string, err error) {
	if errors.Is(err, equeue.ErrTopicNotFound) {
		ra.dropTopic(topic)
	}
}

// dropTopic drops what was read ahead of every queue of topic, for every
// consumer of the client: the client learned the topic was deleted. A
// fetch in flight for one of them keeps nothing when it ends, nor does a
// consumer's pull in flight (of any topic) beyond the batch it asked for.
func (ra *readAhead) dropTopic(topic string) {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	ra.dropTopicLocked(topic)
}

// dropTopicLocked is dropTopic with ra.mu held.
func (ra *readAhead) dropTopicLocked(topic string) {
	ra.drops++
	for k := range ra.queues {
		if k.topic == topic {
			delete(ra.queues, k)
		}
	}
}

// expiredWithin reports whether one of the first want messages of msgs
// has expired since it was read ahead. Such kept messages are not handed
// out: the pull goes to the broker, which skips the expired ones and
// counts them, as it would have without reading ahead. The clock is read
// only for messages that have an expiry.
func expiredWithin(msgs []*equeue.Message, want int) bool {
	return slices.ContainsFunc(msgs[:min(want, len(msgs))], func(m *equeue.Message) bool {
		return !m.ExpiresAt.IsZero() && !m.ExpiresAt.After(time.Now())
	})
}

// idleAnswer reports whether res is "no new message" at offset, with
// nothing to move past.
func idleAnswer(res equeue.PullResult, offset int64) bool {
	return res.Status == equeue.PullNoNewMessage && len(res.Messages) == 0 && res.NextOffset == offset
}
