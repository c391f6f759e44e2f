package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// The batch-and-priority part of TestCrash_FeaturesKillAndReopen: a topic
// with priority lanes, sent to in every lane by the child, and a group
// reading it with a BatchHandler that fails some messages of each batch
// with a *BatchError (some once, through the retry topic, some always, to
// the dead letters). Before each child starts, the parent stores a
// backlog in every lane of the topic (the lowest lane first), so that the
// child's first deliveries must give each queue's higher lanes before
// its lower ones; after each kill it checks that every acknowledged send
// to the topic is stored once where its Send said, and that the group's
// committed offsets never went back, nor below a commit the child saw.
const (
	crashPrioTopic   = "fprio"
	crashPrioLanes   = 3
	crashPrioQueues  = 2
	crashBatchGroup  = "fbatch"
	crashPrioBacklog = 12 // messages of each lane the parent sends before each life
)

// crashPrioOptions are the priority topic's options, in the child and in
// the parent alike.
var crashPrioOptions = equeue.TopicOptions{Queues: crashPrioQueues, Priorities: crashPrioLanes}

// crashBatchOptions are the batch group's options: one handler call at a
// time, so that the order of the calls is the order messages were handed
// out in.
func crashBatchOptions(say func(string, ...any)) equeue.ConsumerOptions {
	return equeue.ConsumerOptions{Group: crashBatchGroup, Subscriptions: []equeue.Subscription{{Topic: crashPrioTopic}},
		From: equeue.ConsumeFromEarliest, CommitInterval: 50 * time.Millisecond, Concurrency: 1, BatchSize: 8,
		RetryTopicDelays: []time.Duration{100 * time.Millisecond}, MaxAttempts: 2,
		LocalRetryDelay: 50 * time.Millisecond, SendBackRetryDelay: 100 * time.Millisecond,
		BatchHandler: func(_ context.Context, msgs []*equeue.Message) error {
			failed := map[int]error{}
			for i, m := range msgs {
				say("PGOT %s %s %d %d %d %d", m.ID, m.Topic, m.Queue, m.Offset, m.Attempt, m.Priority)
				switch crashKind(m.ID) {
				case 0:
					failed[i] = errors.New("fails always")
					continue
				case 1:
					if m.Attempt == 0 {
						failed[i] = errors.New("fails once")
						continue
					}
				}
				say("PHANDLED %s", m.ID)
			}
			if len(failed) > 0 {
				return &equeue.BatchError{Failed: failed}
			}
			return nil
		}}
}

// crashPrioSender sends to the priority topic in every lane, on four
// keys, until the process is killed.
func crashPrioSender(ctx context.Context, p *equeue.Producer, round string, say, fail func(string, ...any)) {
	for i := 0; ; i++ {
		id := fmt.Sprintf("r%s-p-%d", round, i)
		r, err := p.Send(ctx, &equeue.Message{Topic: crashPrioTopic, ID: id, Keys: []string{strconv.Itoa(i % 4)}, Priority: i % crashPrioLanes, Body: []byte(id)})
		if err != nil {
			fail("send %s: %v", id, err)
		}
		say("PACK %s %d %d", id, r.Queue, r.Offset)
		time.Sleep(2 * time.Millisecond)
	}
}

// crashCommitReporter reports the batch group's committed offsets until
// the process is killed: each was stored before the engine showed it.
func crashCommitReporter(ctx context.Context, e *equeue.Engine, say func(string, ...any)) {
	for {
		time.Sleep(20 * time.Millisecond)
		gi, err := e.Group(ctx, crashBatchGroup)
		if err != nil {
			continue
		}
		for _, q := range gi.Queues {
			if q.Committed >= 0 {
				say("PCOMMITTED %s %d %d", q.Topic, q.Queue, q.Committed)
			}
		}
	}
}

// crashPrio is what the parent knows of the priority topic and the batch
// group.
type crashPrio struct {
	acked    map[string]crashPos       // ID → where its Send said
	handled  map[string]bool           // the batch handler succeeded on it
	reported map[equeue.QueueRef]int64 // highest committed offset a child saw
	// committed is the group's committed offsets at the last reopen.
	committed map[equeue.QueueRef]int64
	// start is where this life began in each lane (its committed offset,
	// or 0 when the group had none), and backlog the messages stored in
	// the lanes when it began.
	start   map[int]int64
	backlog map[crashPos]bool
	// got is the backlog messages handed out in this life, and low the
	// lowest lane of each queue that handed out a first delivery.
	got map[crashPos]bool
	low map[int]int
	// firsts and retries count this life's first deliveries and
	// deliveries from the retry topic.
	firsts, retries int
}

func newCrashPrio() *crashPrio {
	return &crashPrio{acked: map[string]crashPos{}, handled: map[string]bool{}, reported: map[equeue.QueueRef]int64{}, committed: map[equeue.QueueRef]int64{}}
}

// line takes one line of the batch group's or the priority sender's
// output; ok is false when the line is not theirs.
func (p *crashPrio) line(f []string) (ok bool, err error) {
	switch {
	case len(f) == 4 && f[0] == "PACK":
		q, _ := strconv.Atoi(f[2])
		off, _ := strconv.ParseInt(f[3], 10, 64)
		p.acked[f[1]] = crashPos{q, off}
	case len(f) == 2 && f[0] == "PHANDLED":
		p.handled[f[1]] = true
	case len(f) == 4 && f[0] == "PCOMMITTED":
		q, _ := strconv.Atoi(f[2])
		off, _ := strconv.ParseInt(f[3], 10, 64)
		ref := equeue.QueueRef{Topic: f[1], Queue: q}
		p.reported[ref] = max(p.reported[ref], off)
	case len(f) == 7 && f[0] == "PGOT":
		q, _ := strconv.Atoi(f[3])
		off, _ := strconv.ParseInt(f[4], 10, 64)
		attempt, _ := strconv.Atoi(f[5])
		lane, _ := strconv.Atoi(f[6])
		if attempt != 0 || f[2] != crashPrioTopic {
			p.retries++
			return true, nil // a retry, delivered without priority
		}
		p.firsts++
		return true, p.first(f[1], crashPos{q, off}, lane)
	default:
		return false, nil
	}
	return true, nil
}

// first checks a first delivery (attempt 0) of the message id stored at
// pos, in lane: only a message this life began short of is delivered
// again, and no message of the backlog comes after a message of a lower
// lane of its queue.
func (p *crashPrio) first(id string, pos crashPos, lane int) error {
	if want := pos.queue % crashPrioLanes; lane != want {
		return fmt.Errorf("%s stored in lane queue %d delivered with priority %d", id, pos.queue, lane)
	}
	if pos.offset < p.start[pos.queue] {
		return fmt.Errorf("%s at %d/%d delivered again, below the committed offset %d", id, pos.queue, pos.offset, p.start[pos.queue])
	}
	queue := pos.queue / crashPrioLanes
	if p.backlog[pos] && !p.got[pos] {
		p.got[pos] = true
		if low, ok := p.low[queue]; ok {
			if low < lane {
				return fmt.Errorf("%s of the backlog of lane %d of queue %d handed out after a message of lane %d", id, lane, queue, low)
			}
		}
	}
	if low, ok := p.low[queue]; !ok || lane < low {
		p.low[queue] = lane
	}
	return nil
}

// reopened checks the priority topic and the batch group in e, reopened
// after a kill (or before the first life): every acknowledged send stored
// once where its Send said, and no committed offset gone back, neither
// below the last reopen's nor below one a child saw.
func (p *crashPrio) reopened(t *testing.T, ctx context.Context, e *equeue.Engine, round string) {
	if err := e.CreateTopicWith(ctx, crashPrioTopic, crashPrioOptions); err != nil && !errors.Is(err, equeue.ErrTopicExists) {
		require.NoError(t, err)
	}
	found := crashReadTopic(t, ctx, e, crashPrioTopic)
	for id, pos := range p.acked {
		require.Equal(t, []crashPos{pos}, found[id], "%s: acknowledged %s must be stored exactly once where its Send said", round, id)
	}
	committed := map[equeue.QueueRef]int64{}
	gi, err := e.Group(ctx, crashBatchGroup)
	if !errors.Is(err, equeue.ErrGroupNotFound) {
		require.NoError(t, err)
		for _, q := range gi.Queues {
			if q.Committed >= 0 {
				committed[q.QueueRef] = q.Committed
			}
		}
	}
	for ref, off := range p.committed {
		require.GreaterOrEqual(t, committed[ref], off, "%s: the committed offset of %s went back", round, ref)
	}
	for ref, off := range p.reported {
		require.GreaterOrEqual(t, committed[ref], off, "%s: a commit of %s that the engine showed was lost", round, ref)
	}
	p.committed = committed
}

// nextLife sends a backlog of every lane to e's priority topic, the
// lowest lane first, and notes where the next life of the batch group
// begins.
func (p *crashPrio) nextLife(t *testing.T, ctx context.Context, e *equeue.Engine, round string) {
	pr, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	for i := range crashPrioBacklog {
		for lane := range crashPrioLanes {
			id := fmt.Sprintf("b%s-p%d-%d", round, lane, i)
			r, err := pr.Send(ctx, &equeue.Message{Topic: crashPrioTopic, ID: id, Keys: []string{strconv.Itoa(i % 4)}, Priority: lane, Body: []byte(id)})
			require.NoError(t, err)
			p.acked[id] = crashPos{r.Queue, r.Offset}
		}
	}
	require.NoError(t, pr.Close())
	info, err := e.Topic(ctx, crashPrioTopic)
	require.NoError(t, err)
	p.start, p.backlog, p.got, p.low = map[int]int64{}, map[crashPos]bool{}, map[crashPos]bool{}, map[int]int{}
	p.firsts, p.retries = 0, 0
	for _, q := range info.Queues {
		from, ok := p.committed[equeue.QueueRef{Topic: crashPrioTopic, Queue: q.ID}]
		if !ok {
			from = q.MinOffset
		}
		p.start[q.ID] = from
		for off := max(from, q.MinOffset); off < q.MaxOffset; off++ {
			p.backlog[crashPos{q.ID, off}] = true
		}
	}
}

// missing notes what of the priority topic is not accounted for yet: a
// message that fails always not dead-lettered, another not handled.
func (p *crashPrio) missing(dl map[string]int, note func(what, id string)) {
	for id := range p.acked {
		switch {
		case crashKind(id) == 0 && dl[id] == 0:
			note("not dead-lettered by "+crashBatchGroup+":", id)
		case crashKind(id) != 0 && !p.handled[id]:
			note("not handled by "+crashBatchGroup+":", id)
		}
	}
}

// crashDeadLetters counts group's dead letters by message ID.
func crashDeadLetters(t *testing.T, ctx context.Context, e *equeue.Engine, group string) map[string]int {
	dl := map[string]int{}
	for from := int64(0); ; {
		page, err := e.ListDeadLetters(ctx, group, equeue.ListDeadLettersRequest{From: from, Max: 1024})
		require.NoError(t, err)
		if len(page) == 0 {
			return dl
		}
		for _, d := range page {
			dl[d.Message.ID]++
		}
		from = page[len(page)-1].Offset + 1
	}
}

// summary is a life's log line of the priority part.
func (p *crashPrio) summary() string {
	return fmt.Sprintf("%d acknowledged in %s, %d handled by %s, %d of the %d backlog messages handed out in lane order (%d first deliveries, %d retries)",
		len(p.acked), crashPrioTopic, len(p.handled), crashBatchGroup, len(p.got), len(p.backlog), p.firsts, p.retries)
}
