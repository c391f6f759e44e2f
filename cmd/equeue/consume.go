package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/equeue-go/equeue"
)

// Consume loop tuning.
const (
	fetchWait    = time.Second // long-poll wait of one fetch
	fetchBatch   = 32          // messages per fetch
	fetchBackoff = 200 * time.Millisecond
	commitWithin = 10 * time.Second // bound of a commit, even after a signal
)

// maxMemberID is the engine's limit on a member ID's length, in bytes.
const maxMemberID = 255

func (a *app) consumeCommand() *cobra.Command {
	var (
		group, from, filter, member string
		deadIf, deadReason          string
		broadcast                   bool
		count                       int
		timeout                     time.Duration
		output                      = newChoice("text", "text", "json", "body")
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Receive messages from a topic as a member of a consumer group",
		Long: `consume joins the consumer group --group (default "equeue-cli") and prints
the messages of TOPIC as they arrive, until --count messages were printed,
--timeout passed without a message, or it is interrupted (Ctrl-C). After
each batch it commits the offset past the last message it printed, and it
leaves the group on exit: the next consume in the same group continues
where this one stopped. It exits 1 when --timeout or an interrupt stop it
before --count messages were printed, and when a queue holds a record of a
newer format version, which this build cannot read (the messages before it
are printed and committed).

In a clustering group (the default) members share the topic's queues; with
--broadcast every member gets every message, with offsets of its own (give
a stable --member to resume them).

--from says where a group that has no committed offset yet starts: latest
(the default: only new messages), earliest (everything stored) or an
RFC 3339 time. It does not move a group that has offsets: use
reset-offsets for that.

--filter selects messages by tag: "*" (all, the default) or "A || B".

--dead-letter-if EXPR moves the messages it matches to the group's dead
letters (%DLQ%GROUP, see dlq list), with --reason as their error, as a
handler giving up on them would: *, tag=T, key=K, prop.NAME=V, body=B
(the whole body) or body~S (the body contains S).

Output: text (one line per message: topic/queue:offset, tag, keys,
properties, body), json (one JSON object per line: id, topic, queue,
offset, tag, keys, properties, body, born_at, stored_at, attempt,
priority; a body that is not UTF-8 comes as body_base64) or body (the body
alone).`,
		Example: `  # Everything stored so far, then stop after 10 messages or 2 s of silence:
  equeue --dir ./data consume orders --from earliest --count 10 --timeout 2s

  # Only tagged messages, as JSON lines:
  equeue --server 127.0.0.1:7654 consume orders --group audit --filter "created || paid" --output json`,
		Args: argCount(1, 1, "TOPIC"),
		RunE: runE(func(cmd *cobra.Command, argv []string) error {
			if count < 0 {
				return usageErrorf("--count must not be negative")
			}
			if timeout < 0 {
				return usageErrorf("--timeout must not be negative")
			}
			start, startTime, err := parseFrom(from)
			if err != nil {
				return usageErrorf("--from %v", err)
			}
			model := equeue.Clustering
			if broadcast {
				model = equeue.Broadcasting
			}
			if err := equeue.ValidateFilter(filter); err != nil {
				return usageErrorf("--filter: %v", err)
			}
			if err := equeue.ValidateName(group); err != nil {
				return usageErrorf("--group: %v", err)
			}
			if len(member) > maxMemberID || strings.IndexByte(member, 0) >= 0 {
				return usageErrorf("--member: a member ID is 1 to %d bytes without NUL", maxMemberID)
			}
			var dl *deadLetterRule
			if deadIf != "" {
				if broadcast {
					return usageErrorf("--dead-letter-if needs a clustering group: broadcasting groups have no dead letters")
				}
				if dl, err = parseDeadLetterRule(deadIf, deadReason); err != nil {
					return usageErrorf("--dead-letter-if %v", err)
				}
			}
			topic := argv[0]
			return a.withConn(readWrite, func(c *conn) error {
				ctx := cmd.Context()
				// A group may subscribe to a topic that does not exist yet;
				// for a command line that is almost always a typo. A pull
				// finds out with the consume right alone.
				if _, err := c.Pull(ctx, &equeue.PullRequest{Topic: topic, Max: 1}); err != nil {
					return err
				}
				// Say where a new group starts: a consume that prints
				// nothing because the group began at the end of the queues
				// is otherwise a puzzle. (Without the admin right the
				// question cannot be asked; then say nothing.)
				if _, err := c.Group(ctx, group); errors.Is(err, equeue.ErrGroupNotFound) {
					fmt.Fprintf(a.stderr, "new group %s %s\n", group, startsAt(start, startTime))
				}
				pc, err := equeue.NewPullConsumer(c.broker, equeue.PullConsumerOptions{
					Group: group, ID: member, Model: model,
					Subscriptions: []equeue.Subscription{{Topic: topic, Filter: filter}},
					From:          start, FromTime: startTime, Logger: a.log,
				})
				if err != nil {
					return err
				}
				if err := pc.Start(ctx); err != nil {
					return fmt.Errorf("join group %s: %w", group, err)
				}
				l := &consumeLoop{a: a, pc: pc, count: count, timeout: timeout, print: a.messagePrinter(output.value),
					b: c.broker, group: group, dl: dl}
				err = l.run(ctx)
				if cerr := pc.Close(); cerr != nil && !errors.Is(cerr, equeue.ErrClosed) {
					err = errors.Join(err, fmt.Errorf("leave group %s: %w", group, cerr))
				}
				a.log.Info("consumed", "topic", topic, "group", group, "messages", l.printed)
				return err
			})
		}),
	}
	f := cmd.Flags()
	f.StringVar(&group, "group", "equeue-cli", "consumer group to join")
	f.StringVar(&member, "member", "", "member ID (default: host-pid-random); a broadcast member resumes its own offsets under the same ID")
	f.BoolVar(&broadcast, "broadcast", false, "broadcasting group: every member gets every message")
	f.StringVar(&from, "from", "latest", "where a group with no committed offset starts: latest, earliest or an RFC 3339 time")
	f.StringVar(&filter, "filter", "*", "tag expression: \"*\" or \"A || B\"")
	f.IntVar(&count, "count", 0, "exit after printing this many messages (0: no limit)")
	f.Var(output, "output", "output format: text, json or body")
	f.DurationVar(&timeout, "timeout", 0, "exit after this long without a message (0: wait forever)")
	f.StringVar(&deadIf, "dead-letter-if", "", "move matching messages to the group's dead letters: *, tag=T, key=K, prop.NAME=V, body=B or body~S")
	f.StringVar(&deadReason, "reason", "", "the error text stored with --dead-letter-if's dead letters")
	return cmd
}

// startsAt says in words where a new group starts.
func startsAt(from equeue.ConsumeFrom, t time.Time) string {
	switch from {
	case equeue.ConsumeFromEarliest:
		return "starts at the oldest stored message (--from earliest)"
	case equeue.ConsumeFromTimestamp:
		return "starts at the first message stored at or after " + t.UTC().Format(time.RFC3339Nano)
	}
	return "starts at the end of each queue (--from latest): only messages sent from now on arrive; --from earliest reads what is stored"
}

// consumeLoop fetches the queues the group grants, prints what arrives and
// commits what was printed.
type consumeLoop struct {
	a       *app
	pc      *equeue.PullConsumer
	count   int
	timeout time.Duration
	print   func(*equeue.Message) error
	// b, group and dl serve --dead-letter-if (dl nil: not given).
	b     equeue.Broker
	group string
	dl    *deadLetterRule

	printed   int
	remaining atomic.Int64 // messages still wanted; large when unlimited
}

type fetched struct {
	q    equeue.QueueRef
	msgs []*equeue.Message
	// next is the consumer's position after the fetch: past messages the
	// filter rejected too. -1 when unknown.
	next int64
	// err, when not nil, ends the consume: the queue holds a record this
	// build can never read (no message comes with it).
	err error
}

func (l *consumeLoop) run(ctx context.Context) error {
	if l.count > 0 {
		l.remaining.Store(int64(l.count))
	} else {
		l.remaining.Store(1 << 62)
	}
	fctx, stopFetch := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stopFetch()
		wg.Wait()
	}()
	batches := make(chan fetched)
	running := map[equeue.QueueRef]context.CancelFunc{}
	// resync starts a fetcher for each newly granted queue and stops those
	// of queues taken away; it returns the channel of the next change.
	resync := func() <-chan struct{} {
		changed := l.pc.Changed()
		now := l.pc.Assigned()
		for q, stop := range running {
			if !slices.Contains(now, q) {
				stop()
				delete(running, q)
			}
		}
		for _, q := range now {
			if _, ok := running[q]; !ok {
				qctx, stop := context.WithCancel(fctx)
				running[q] = stop
				wg.Add(1)
				go func() {
					defer wg.Done()
					l.fetch(qctx, q, batches)
				}()
			}
		}
		l.a.log.Debug("assignment", "queues", now)
		return changed
	}
	changed := resync()

	var idle <-chan time.Time
	var timer *time.Timer
	if l.timeout > 0 {
		timer = time.NewTimer(l.timeout)
		defer timer.Stop()
		idle = timer.C
	}
	for {
		select {
		case <-ctx.Done():
			// Interrupted: what was printed is committed. Without --count
			// this is how consume is stopped; with it, fewer than asked
			// for is a failure, as at --timeout.
			if l.count > 0 && l.printed < l.count {
				return fmt.Errorf("interrupted: printed %d of %d", l.printed, l.count)
			}
			return nil
		case <-changed:
			changed = resync()
		case <-idle:
			if l.count > 0 && l.printed < l.count {
				return fmt.Errorf("timed out after %v without a message: printed %d of %d", l.timeout, l.printed, l.count)
			}
			return nil
		case b := <-batches:
			if b.err != nil {
				return b.err
			}
			done, err := l.deliver(b)
			if err != nil {
				return err
			}
			if done {
				return nil
			}
			if timer != nil && len(b.msgs) > 0 { // only a message resets the idle timeout
				timer.Reset(l.timeout)
			}
		}
	}
}

// deliver prints a batch (up to --count) and commits past the last message
// printed. It reports whether --count is reached.
func (l *consumeLoop) deliver(b fetched) (bool, error) {
	var last *equeue.Message
	var err error
	all := true
	for _, m := range b.msgs {
		if l.count > 0 && l.printed >= l.count {
			all = false
			break
		}
		if err = l.print(m); err != nil {
			err = fmt.Errorf("write output: %w", err)
			break
		}
		if l.dl != nil && l.dl.match(m) {
			// Stored as a dead letter before the commit passes it.
			if err = l.deadLetter(b.q, m); err != nil {
				break
			}
		}
		l.printed++
		l.remaining.Add(-1)
		last = m
	}
	commitAt := int64(-1)
	if last != nil {
		commitAt = last.Offset + 1
	}
	if err == nil && all && b.next > commitAt {
		commitAt = b.next // every message of the batch was printed: skip filtered ones too
	}
	if commitAt >= 0 {
		last := &equeue.Message{Offset: commitAt - 1}
		ctx, cancel := context.WithTimeout(context.Background(), commitWithin)
		cerr := l.pc.Commit(ctx, b.q, last.Offset+1)
		cancel()
		if cerr != nil {
			// The queue moved to another member; it will deliver what
			// this one printed but could not commit again.
			l.a.log.Warn("commit failed; messages may be delivered again", "queue", b.q, "offset", last.Offset+1, "err", cerr)
		}
	}
	if err != nil {
		return true, err
	}
	return l.count > 0 && l.printed >= l.count, nil
}

// fetch long-polls one granted queue until ctx ends or the queue is taken away.
func (l *consumeLoop) fetch(ctx context.Context, q equeue.QueueRef, out chan<- fetched) {
	for ctx.Err() == nil {
		max := int(min(l.remaining.Load(), fetchBatch))
		if max <= 0 {
			return
		}
		msgs, err := l.pc.Fetch(ctx, q, max, fetchWait)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, equeue.ErrFenced), errors.Is(err, equeue.ErrClosed):
			return
		case errors.Is(err, equeue.ErrUnsupportedFormat):
			// A record of a newer format version: a newer engine wrote
			// it, and no retry of this build will read it (the consumer
			// library waits on purpose for a newer engine to serve the
			// queue; a command line stops). The messages before it were
			// delivered by earlier fetches; err names the queue, the
			// offset and the version.
			err = fmt.Errorf("%w; consume stops there: a newer engine wrote that record, consume the queue with one", err)
			select {
			case out <- fetched{q: q, next: -1, err: err}:
			case <-ctx.Done():
			}
			return
		case err != nil:
			l.a.log.Warn("fetch failed; retrying", "queue", q, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(fetchBackoff):
			}
			continue
		}
		next, ok := l.pc.Position(q)
		if !ok {
			next = -1
		}
		if len(msgs) == 0 && next < 0 {
			continue
		}
		select {
		case out <- fetched{q: q, msgs: msgs, next: next}:
		case <-ctx.Done():
			return
		}
	}
}

// messageJSON is the JSON form of a received message.
type messageJSON struct {
	ID         string            `json:"id"`
	Topic      string            `json:"topic"`
	Queue      int               `json:"queue"`
	Offset     int64             `json:"offset"`
	Tag        string            `json:"tag"`
	Keys       []string          `json:"keys"`
	Properties map[string]string `json:"properties"`
	Body       string            `json:"body"`
	BodyBase64 string            `json:"body_base64,omitempty"`
	BornAt     time.Time         `json:"born_at"`
	StoredAt   time.Time         `json:"stored_at"`
	Attempt    int               `json:"attempt"`
	// Priority is the priority lane the message was stored in (0 on a
	// topic without priorities): equeue.Message.Priority.
	Priority int `json:"priority"`
}

func toMessageJSON(m *equeue.Message) messageJSON {
	j := messageJSON{
		ID: m.ID, Topic: m.Topic, Queue: m.Queue, Offset: m.Offset, Tag: m.Tag,
		Keys: m.Keys, Properties: m.Properties, Body: string(m.Body),
		BornAt: m.BornAt, StoredAt: m.StoredAt, Attempt: m.Attempt, Priority: m.Priority,
	}
	if j.Keys == nil {
		j.Keys = []string{}
	}
	if j.Properties == nil {
		j.Properties = map[string]string{}
	}
	if !utf8.Valid(m.Body) {
		j.BodyBase64 = base64.StdEncoding.EncodeToString(m.Body)
	}
	return j
}

// messagePrinter prints messages in the given format.
func (a *app) messagePrinter(format string) func(*equeue.Message) error {
	w := a.stdout
	switch format {
	case "json":
		return func(m *equeue.Message) error { return writeJSON(w, toMessageJSON(m)) }
	case "body":
		return func(m *equeue.Message) error {
			if _, err := w.Write(m.Body); err != nil {
				return err
			}
			_, err := io.WriteString(w, "\n")
			return err
		}
	}
	return func(m *equeue.Message) error {
		_, err := fmt.Fprintln(w, formatMessage(m))
		return err
	}
}

// formatMessage is the one-line text form of a message.
func formatMessage(m *equeue.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%d:%d", m.Topic, m.Queue, m.Offset)
	if m.Tag != "" {
		fmt.Fprintf(&b, " tag=%s", m.Tag)
	}
	if len(m.Keys) > 0 {
		fmt.Fprintf(&b, " keys=%s", strings.Join(m.Keys, ","))
	}
	for _, k := range slices.Sorted(maps.Keys(m.Properties)) {
		fmt.Fprintf(&b, " prop.%s=%s", k, m.Properties[k])
	}
	if m.Attempt > 0 {
		fmt.Fprintf(&b, " attempt=%d", m.Attempt)
	}
	b.WriteString("  ")
	b.Write(m.Body)
	return b.String()
}
