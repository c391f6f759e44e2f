package equeue

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unsafe"

	"github.com/equeue-go/equeue/store"
)

// PullStatus says what a pull found.
type PullStatus int

const (
	// PullFound means Messages holds at least one message.
	PullFound PullStatus = iota
	// PullNoNewMessage means the offset is the queue's end and nothing arrived
	// within the wait.
	PullNoNewMessage
	// PullNoMatch means messages were scanned but none matched the filter (or
	// all had expired or were corrupt, or were retry copies of a deleted
	// topic); NextOffset moves past them, up to a
	// record of a format version the engine cannot read, if one follows.
	PullNoMatch
	// PullOffsetMoved means the offset was below the queue's low watermark or
	// beyond its end; NextOffset is the valid offset to continue from.
	PullOffsetMoved
)

// String returns the status in words, e.g. "offset-moved".
func (s PullStatus) String() string {
	switch s {
	case PullFound:
		return "found"
	case PullNoNewMessage:
		return "no-new-message"
	case PullNoMatch:
		return "no-match"
	case PullOffsetMoved:
		return "offset-moved"
	}
	return fmt.Sprintf("PullStatus(%d)", int(s))
}

// PullRequest asks for messages of one queue from an offset.
type PullRequest struct {
	// Topic is the topic to read.
	Topic string
	// Queue is the queue number, from 0.
	Queue int
	// Offset is the first offset to read; PullResult.NextOffset gives the
	// next one.
	Offset int64
	// Max is the most messages to return; 0 means 32, at most 1024.
	Max int
	// Filter is a tag expression: "*" (or empty) or "A || B".
	Filter string
	// Wait is how long to wait at the end of the queue for a new message
	// (long-poll); 0 returns at once. Capped by Options.MaxPullWait.
	Wait time.Duration
	// MaxBytes, when positive, bounds the stored size of the messages
	// returned: the pull stops before a message that would pass it. A
	// first message larger than MaxBytes fails with ErrMessageTooLarge.
	// Zero means no bound beyond the engine's own read budget. A remote
	// client sends it with the pull (values above 2^31-1 are taken as
	// 2^31-1) and reads such a pull from the broker, not ahead.
	MaxBytes int

	// Group, Member and Epoch fence the pull for a clustering consumer: the
	// pull is refused with ErrFenced unless Member owns the queue in Group
	// under Epoch. Empty Group means an unfenced read.
	Group string
	// Member is the member that owns the queue (see Group).
	Member string
	// Epoch is the group epoch Member was granted the queue in (see Group).
	Epoch int64
}

// PullResult is the answer to a pull.
type PullResult struct {
	// Status says whether messages were found, and if not, why.
	Status PullStatus
	// Messages are the messages read, in offset order (empty unless Status
	// is PullFound).
	Messages []*Message
	// NextOffset is where the next pull of this queue should start.
	NextOffset int64
	// MinOffset and MaxOffset are the queue's bounds at the time of the pull
	// (MaxOffset is one past the last message).
	MinOffset int64
	// MaxOffset is one past the queue's last message (see MinOffset).
	MaxOffset int64
	// Corrupt lists offsets skipped because their records failed the
	// checksum. A record of a format version the engine cannot read is not
	// skipped: the pull stops before it, and one from its offset fails
	// with ErrUnsupportedFormat.
	Corrupt []int64
	// Expired counts messages skipped because their time-to-live ran out.
	// Only a group's pull counts them in Stats().ExpiredMessages.
	Expired int
	// DeletedTopicRetries counts, in a pull of a group's retry topic, the
	// retry copies skipped because their origin topic was deleted, or
	// deleted and made again (retryorigin.go); a copy whose time-to-live
	// also ran out counts in Expired instead. Only a group's pull counts
	// them in Stats().DeletedTopicRetries.
	DeletedTopicRetries int
	// Priority is the priority lane the messages found were stored in, on
	// a topic created with TopicOptions.Priorities (queue ID q is lane q
	// mod the lane count): what each message's Priority holds. It is 0
	// when none was found, and on a topic without priorities.
	Priority int
}

// maxScanBatches bounds how many reads one pull makes to find a match.
const maxScanBatches = 8

// Pull reads up to req.Max messages matching the filter from req.Offset. At
// the end of the queue it waits up to req.Wait for an append (woken at once
// by it, not by polling), then reports PullNoNewMessage. It stops before a
// record of a format version this build cannot read (written by a newer
// engine), and fails with an error matching ErrUnsupportedFormat when that
// record is at req.Offset.
func (e *Engine) Pull(ctx context.Context, req *PullRequest) (PullResult, error) {
	return e.pull(ctx, req, nil)
}

// PullStored is Pull for a transport that carries the messages as the
// engine stored them, in a stored batch (storedbatch.go): the messages
// found are in the StoredRecords, checked (checksum), filtered (tag, TTL)
// and bounded as Pull does but not decoded, and the result's Messages is
// empty; its status, offsets, corrupt offsets, expired count, count of
// retry copies of deleted topics and priority lane are Pull's.
//
// Transport seam: package remote calls it to serve pulls; applications do
// not.
func (e *Engine) PullStored(ctx context.Context, req *PullRequest) (PullResult, *StoredRecords, error) {
	stored := new(StoredRecords)
	res, err := e.pull(ctx, req, stored)
	if err != nil {
		return res, nil, err
	}
	return res, stored, nil
}

// pull is Pull, or with stored set PullStored, whose messages it puts
// there.
func (e *Engine) pull(ctx context.Context, req *PullRequest, stored *StoredRecords) (res PullResult, err error) {
	if err := e.enter(ctx); err != nil {
		return PullResult{}, err
	}
	defer e.leave()
	if req == nil {
		return PullResult{}, fmt.Errorf("%w: nil pull request", ErrInvalidArgument)
	}
	max := req.Max
	if max == 0 {
		max = DefaultPullBatch
	}
	if max < 0 || max > MaxPullBatch {
		return PullResult{}, fmt.Errorf("%w: pull max %d not in 1..%d", ErrInvalidArgument, req.Max, MaxPullBatch)
	}
	if req.Wait < 0 || req.MaxBytes < 0 {
		return PullResult{}, fmt.Errorf("%w: negative pull wait or byte bound", ErrInvalidArgument)
	}
	f, err := parseFilter(req.Filter)
	if err != nil {
		return PullResult{}, err
	}
	if err := checkLookupNames(req.Topic, req.Group); err != nil {
		return PullResult{}, err
	}
	t, ok := e.lookupTopic(req.Topic)
	if !ok {
		return PullResult{}, fmt.Errorf("%w: %q", ErrTopicNotFound, req.Topic)
	}
	if isReplyTopicName(t.name) {
		// A requester's listener is alive. A topic the reply expiry
		// deleted while this pull started is gone (replyexpiry.go).
		end, ok := t.replyReads.begin(t)
		if !ok {
			return PullResult{}, fmt.Errorf("%w: %q", ErrTopicNotFound, req.Topic)
		}
		defer end()
	}
	q, err := t.queue(req.Queue)
	if err != nil {
		return PullResult{}, err
	}
	if req.Group != "" {
		if err := e.groups.checkOwner(req.Group, req.Member, req.Epoch, t.name, q.id); err != nil {
			return PullResult{}, err
		}
	}
	if obs := e.opts.Observer; obs != nil {
		start := time.Now()
		defer func() { obs.ObservePull(t.name, q.id, time.Since(start), len(res.Messages)+stored.Len()) }()
	}
	wait := min(req.Wait, e.opts.MaxPullWait)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		min, next, wake := q.bounds()
		res := PullResult{MinOffset: min, MaxOffset: next, NextOffset: req.Offset}
		switch {
		case req.Offset < min:
			res.Status, res.NextOffset = PullOffsetMoved, min
			return res, nil
		case req.Offset > next:
			res.Status, res.NextOffset = PullOffsetMoved, next
			return res, nil
		case req.Offset < next:
			res, err := e.readQueue(q, req.Offset, next, max, req.MaxBytes, f, res, stored, req.Group != "")
			if req.Group != "" {
				grant := Grant{QueueRef: QueueRef{Topic: t.name, Queue: q.id}, Epoch: req.Epoch}
				var big *MessageTooLargeError
				switch {
				case err == nil:
					e.marks.record(req.Group, req.Member, grant, res.NextOffset, &t.deleted)
				case errors.As(err, &big):
					// Offered but too large for the puller: it may send
					// it back (to the dead letters) by reference.
					e.marks.record(req.Group, req.Member, grant, big.Offset+1, &t.deleted)
				}
			}
			return res, err
		}
		if wait <= 0 {
			res.Status = PullNoNewMessage
			return res, nil
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		select {
		case <-wake:
			if t.deleted.Load() {
				return PullResult{}, fmt.Errorf("%w: %q was deleted", ErrTopicNotFound, t.name)
			}
			if req.Group != "" {
				// The member may have lost the queue while it waited: a
				// pull that started now would be refused, and so is this.
				if err := e.groups.checkOwner(req.Group, req.Member, req.Epoch, t.name, q.id); err != nil {
					return PullResult{}, err
				}
			}
		case <-timer.C:
			res.Status = PullNoNewMessage
			return res, nil
		case <-ctx.Done():
			return PullResult{}, ctx.Err()
		case <-e.closing:
			return PullResult{}, ErrClosed
		}
	}
}

// readBudget is the most bytes one store read of a pull asks for.
const readBudget = 4 << 20

// readQueue reads [from, end) in short read transactions until it has
// matches or scanned maxScanBatches reads. With maxBytes > 0 it returns
// no more than maxBytes of stored records. It stops before a record of a
// format version this build cannot read, and fails with
// ErrUnsupportedFormat when that record is at from. With stored set, the messages
// found go there as their records, checked and filtered (scanRecord) but
// not decoded, and res.Messages stays empty. With group set (a group's
// pull) the expired messages it skips count in Stats().ExpiredMessages;
// a read without a group, a browse, only reports them. A retry topic's
// copies of a deleted topic are skipped as expired ones are, and counted
// apart: in PullResult.DeletedTopicRetries and, for a group's pull,
// Stats().DeletedTopicRetries (retryorigin.go).
// slabMessages is the most messages a pull allocates at once: a slab of
// them stays within the allocator's largest size class (32 KiB), past
// which each allocation takes the heap's lock and clears its memory apart.
const slabMessages = 32 << 10 / int(unsafe.Sizeof(Message{}))

func (e *Engine) readQueue(q *queue, from, end int64, max, maxBytes int, f tagFilter, res PullResult, stored *StoredRecords, group bool) (PullResult, error) {
	off := from
	now := time.Now()
	nowNanos := now.UnixNano()
	budget := readBudget
	if maxBytes > 0 {
		budget = min(budget, maxBytes)
	}
	size, found := 0, 0
	var unread error // a record of a format version this build cannot read
	// A message carries the lane it was stored in (Message.Priority): on a
	// topic with priorities, queue ID q is lane q mod the lane count.
	lane := q.id % q.topic.laneCount()
	// A retry topic's copies of a topic that is gone are skipped as
	// expired ones are, and counted apart (retryorigin.go).
	retries := strings.HasPrefix(q.topic.name, RetryTopicPrefix)
	for scans := 0; off < end && scans < maxScanBatches && found == 0 && unread == nil; scans++ {
		recs, err := e.st.Read(q.key, uint64(off), uint64(end), max, budget)
		if errors.Is(err, store.ErrUnsupportedFormat) {
			// A segment a newer engine wrote starts here: as for a
			// record of a later version, the pull stops before it.
			unread = unsupportedSegment(err)
			break
		}
		if err != nil {
			return PullResult{}, fmt.Errorf("equeue: read %s/%d at %d: %w", q.topic.name, q.id, off, err)
		}
		if len(recs) == 0 {
			// Records below end are gone: retention deleted them under us,
			// or they were lost before the engine opened (queueend.go),
			// which leaves nothing to read up to end.
			min, _, _ := q.bounds()
			if min > off {
				off = min
				continue
			}
			off = end
			break
		}
		// The messages of one read are allocated together, in slabs of
		// up to slabMessages: one allocation per read (or two) instead of
		// one per message, each small enough for the allocator's caches.
		var slab []Message
		var ids idFormatter
		if stored == nil {
			ids.pending = make([]pendingID, 0, len(recs))
		}
		for i, r := range recs {
			var m *Message
			var expired, gone, match bool
			switch {
			case stored == nil:
				if len(slab) == 0 {
					slab = make([]Message, min(len(recs)-i, slabMessages))
				}
				m, slab = &slab[0], slab[1:]
				err = decodeStoredRecord(m, r.Value, &ids, e.recordsChecked)
				expired = !m.ExpiresAt.IsZero() && !m.ExpiresAt.After(now)
				gone = retries && !expired && err == nil && e.originGone(m.sys[SysOriginTopic], m.sys[SysOriginTopicID])
				match = err == nil && f.match(m.Tag)
			case retries:
				// The copy's origin is found in the same scan: the
				// record is not decoded to read it.
				tag, expires, origin, serr := scanStoredRetry(r.Value, e.recordsChecked)
				err = serr
				expired = expires != 0 && expires <= nowNanos
				gone = !expired && err == nil && e.storedOriginGone(origin)
				match = err == nil && f.matchBytes(tag)
			default:
				var tag []byte
				var expires int64
				tag, expires, err = scanStoredRecord(r.Value, e.recordsChecked)
				expired = expires != 0 && expires <= nowNanos
				match = err == nil && f.matchBytes(tag)
			}
			if errors.Is(err, ErrUnsupportedFormat) {
				// Not damage: a newer engine wrote it. Skipping it would
				// let consumers commit past it; the pull stops before it.
				off, unread = int64(r.Offset), err
				break
			}
			if err != nil {
				off = int64(r.Offset) + 1
				res.Corrupt = append(res.Corrupt, int64(r.Offset))
				e.noteCorrupt(q, int64(r.Offset), res.MinOffset, err)
				continue
			}
			if expired {
				off = int64(r.Offset) + 1
				if group {
					e.stats.expired.Add(1)
				}
				res.Expired++
				continue
			}
			if gone {
				off = int64(r.Offset) + 1
				if group {
					e.stats.deletedRetries.Add(1)
				}
				res.DeletedTopicRetries++
				continue
			}
			if !match {
				off = int64(r.Offset) + 1
				continue
			}
			if maxBytes > 0 && size+len(r.Value) > maxBytes {
				if found == 0 {
					return PullResult{}, &MessageTooLargeError{QueueRef: QueueRef{Topic: q.topic.name, Queue: q.id},
						Offset: int64(r.Offset), Size: len(r.Value), Limit: maxBytes}
				}
				break // the rest is for the next pull
			}
			size += len(r.Value)
			off = int64(r.Offset) + 1
			found++
			if stored != nil {
				if stored.recs == nil {
					stored.ref = QueueRef{Topic: q.topic.name, Queue: q.id}
					stored.offsets = make([]int64, 0, min(max, len(recs)-i))
					stored.recs = make([][]byte, 0, cap(stored.offsets))
				}
				stored.add(int64(r.Offset), r.Value)
				continue
			}
			m.Topic, m.Queue, m.Offset, m.Priority = q.topic.name, q.id, int64(r.Offset), lane
			if res.Messages == nil {
				res.Messages = make([]*Message, 0, min(max, len(recs)-i))
			}
			res.Messages = append(res.Messages, m)
		}
		ids.flush()
	}
	if unread != nil && off == from {
		return PullResult{}, e.refuseUnsupported(q, off, unread)
	}
	res.NextOffset = off
	if found > 0 {
		res.Status, res.Priority = PullFound, lane
	} else {
		res.Status = PullNoMatch
	}
	return res, nil
}

// WaitAny waits up to wait (capped by Options.MaxPullWait) until at least
// one of the pulls would find something at its offset: a message, or an
// offset outside the queue's bounds. It returns nil then, or when the wait
// ends, without reading anything; an unknown topic or queue also returns
// nil at once, for the pull itself to report. One call waits on every
// queue without a goroutine per queue, so a transport can serve many
// consumers' long-polls cheaply. A nil pull in pulls gets
// ErrInvalidArgument, whatever the wait.
//
// Transport seam: package remote calls it to serve long-polls;
// applications do not.
func (e *Engine) WaitAny(ctx context.Context, pulls []*PullRequest, wait time.Duration) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	for i, p := range pulls { // whatever the wait, as Namespace.WaitAny
		if p == nil {
			return fmt.Errorf("%w: pull %d is nil", ErrInvalidArgument, i)
		}
	}
	wait = min(wait, e.opts.MaxPullWait)
	if wait <= 0 || len(pulls) == 0 {
		return nil
	}
	// A wait on a reply topic is a read of it, as a Pull's is: the reply
	// expiry leaves the topic while it runs (replyexpiry.go).
	for _, p := range pulls {
		if !isReplyTopicName(p.Topic) {
			continue
		}
		t, ok := e.lookupTopic(p.Topic)
		if !ok {
			return nil
		}
		end, ok := t.replyReads.begin(t)
		if !ok {
			return nil // deleted: the pull reports it
		}
		defer end()
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	fixed := []reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(e.closing)},
	}
	cases := make([]reflect.SelectCase, 0, len(fixed)+len(pulls))
	for {
		cases = append(cases[:0], fixed...)
		for _, p := range pulls {
			if p == nil {
				return nil
			}
			t, ok := e.lookupTopic(p.Topic)
			if !ok || t.deleted.Load() {
				return nil
			}
			q, err := t.queue(p.Queue)
			if err != nil {
				return nil
			}
			min, next, wake := q.bounds()
			if p.Offset != next || p.Offset < min {
				return nil
			}
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(wake)})
		}
		switch chosen, _, _ := reflect.Select(cases); chosen {
		case 0:
			return ctx.Err()
		case 1:
			return nil
		case 2:
			return ErrClosed
		}
	}
}
