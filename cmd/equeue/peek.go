package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// peekScanBatch is how many messages one read of a --key scan asks for.
const peekScanBatch = 256

func (a *app) peekCommand() *cobra.Command {
	var (
		queue       int
		offset      int64
		at, key     string
		max         int
		hasQueueSet bool
		output      = newChoice("text", "text", "json", "body")
	)
	cmd := &cobra.Command{
		Use:   "peek TOPIC",
		Short: "Browse a topic's messages without joining a consumer group",
		Long: `peek prints stored messages of TOPIC without joining a consumer group: no
offset is committed and no group sees a change. It reads every queue, or
only --queue N, from the oldest stored message, from --offset O (with
--queue), from the first message stored at or after --time T (RFC 3339), or
only the messages with the key --key K. It prints at most --max messages
per queue (default 10).

Output as for consume: text, json or body. With json on a topic with
priorities each message's priority is the lane it was stored in; from a
server that predates lanes in pull answers, a token without admin rights
cannot read the topic's lane count, so the priority is then 0.`,
		Example: `  equeue --dir ./data peek orders
  equeue --dir ./data peek orders --queue 2 --offset 100 --max 5
  equeue --server 127.0.0.1:7654 peek orders --time 2026-11-29T23:00:00Z --output json
  equeue --dir ./data peek orders --key customer-42`,
		Args: argCount(1, 1, "TOPIC"),
		RunE: runE(func(cmd *cobra.Command, argv []string) error {
			hasQueueSet = cmd.Flags().Changed("queue")
			set := 0
			for _, name := range []string{"offset", "time", "key"} {
				if cmd.Flags().Changed(name) {
					set++
				}
			}
			switch {
			case set > 1:
				return usageErrorf("--offset, --time and --key are exclusive")
			case cmd.Flags().Changed("offset") && !hasQueueSet:
				return usageErrorf("--offset needs --queue: offsets are per queue")
			case queue < 0 || offset < 0:
				return usageErrorf("--queue and --offset must not be negative")
			case max < 1 || max > equeue.MaxPullBatch:
				return usageErrorf("--max must be in 1..%d", equeue.MaxPullBatch)
			}
			var since time.Time
			if at != "" {
				t, err := time.Parse(time.RFC3339Nano, at)
				if err != nil {
					return usageErrorf("--time %q: want an RFC 3339 time, e.g. 2026-11-29T23:00:00Z", at)
				}
				since = t
			}
			topic := argv[0]
			print := a.messagePrinter(output.value)
			return a.withConn(readOnly, func(c *conn) error {
				ctx := cmd.Context()
				p := peeker{b: c, topic: topic}
				if output.value == "json" {
					lanes, err := topicLanes(ctx, c, topic)
					if err != nil {
						return err
					}
					p.lanes = lanes
				}
				for q := 0; ; q++ {
					if hasQueueSet {
						q = queue
					}
					start := int64(0)
					var err error
					switch {
					case cmd.Flags().Changed("offset"):
						start = offset
					case !since.IsZero():
						start, err = p.offsetAt(ctx, q, since)
					}
					var msgs []*equeue.Message
					if err == nil {
						msgs, err = p.read(ctx, q, start, max, key)
					}
					if errors.Is(err, equeue.ErrQueueNotFound) && q > 0 && !hasQueueSet {
						return nil // past the last queue
					}
					// What was read before a failure (a record of a newer
					// format, say) is printed before the failure is.
					for _, m := range msgs {
						p.markLane(m)
						if err := print(m); err != nil {
							return fmt.Errorf("write output: %w", err)
						}
					}
					if err != nil {
						return err
					}
					if hasQueueSet {
						return nil
					}
				}
			})
		}),
	}
	f := cmd.Flags()
	f.IntVar(&queue, "queue", 0, "read only this queue (default: every queue)")
	f.Int64Var(&offset, "offset", 0, "start at this offset (needs --queue)")
	f.StringVar(&at, "time", "", "start at the first message stored at or after this RFC 3339 time")
	f.StringVar(&key, "key", "", "print only messages with this key")
	f.IntVar(&max, "max", 10, "most messages to print per queue")
	f.Var(output, "output", "output format: text, json or body")
	return cmd
}

// peeker reads a topic with unfenced pulls, which need no group.
type peeker struct {
	b     equeue.Broker
	topic string
	// lanes is the topic's number of priority lanes (0 without).
	lanes int
}

// topicLanes returns the number of priority lanes of topic (0 without
// priorities), which a browse of a server that predates lanes in pull
// answers needs to tell each message's lane (current servers and the
// engine give it in the pull). Reading it is an admin call: for a token
// without that right it returns 0, and the messages keep the Priority
// their pull gave them.
func topicLanes(ctx context.Context, c *conn, topic string) (int, error) {
	info, err := c.Topic(ctx, topic)
	if errors.Is(err, remote.ErrPermissionDenied) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return info.Priorities, nil
}

// markLane sets the Priority of a message of a topic with priorities to
// the lane its queue ID stands for (queue × lanes + lane), as a
// consumer's messages carry it; a pull of a server that predates lanes in
// pull answers leaves it 0.
func (p peeker) markLane(m *equeue.Message) {
	if p.lanes > 0 {
		m.Priority = m.Queue % p.lanes
	}
}

// pull reads from off, following the queue's bounds when off is outside
// them; it returns the messages and the next offset.
func (p peeker) pull(ctx context.Context, q int, off int64, max int) ([]*equeue.Message, int64, bool, error) {
	for range 3 {
		res, err := p.b.Pull(ctx, &equeue.PullRequest{Topic: p.topic, Queue: q, Offset: off, Max: max})
		if err != nil {
			return nil, off, false, err
		}
		switch res.Status {
		case equeue.PullOffsetMoved:
			if res.NextOffset < off { // past the end
				return nil, res.NextOffset, true, nil
			}
			off = res.NextOffset
			continue
		case equeue.PullNoNewMessage:
			return nil, res.NextOffset, true, nil
		}
		return res.Messages, res.NextOffset, res.NextOffset >= res.MaxOffset, nil
	}
	return nil, off, true, nil
}

// read returns up to max messages of queue q from off, only those with
// key when key is set. After a failed read it returns the messages read
// before it with the error.
func (p peeker) read(ctx context.Context, q int, off int64, max int, key string) ([]*equeue.Message, error) {
	var out []*equeue.Message
	for len(out) < max {
		n := max - len(out)
		if key != "" {
			n = peekScanBatch
		}
		msgs, next, end, err := p.pull(ctx, q, off, n)
		if err != nil {
			return out, err
		}
		for _, m := range msgs {
			if len(out) < max && (key == "" || slices.Contains(m.Keys, key)) {
				out = append(out, m)
			}
		}
		if end || next <= off {
			break
		}
		off = next
	}
	return out, nil
}

// offsetAt finds the first offset of queue q stored at or after t, by a
// binary search over single-message reads (store times rise with offsets).
func (p peeker) offsetAt(ctx context.Context, q int, t time.Time) (int64, error) {
	res, err := p.b.Pull(ctx, &equeue.PullRequest{Topic: p.topic, Queue: q, Offset: 0, Max: 1})
	if err != nil {
		return 0, err
	}
	lo, hi := res.MinOffset, res.MaxOffset // the answer lies in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		msgs, _, _, err := p.pull(ctx, q, mid, 1)
		if err != nil {
			return 0, err
		}
		if len(msgs) == 0 || !msgs[0].StoredAt.Before(t) {
			hi = mid
		} else {
			lo = msgs[0].Offset + 1
		}
	}
	return lo, nil
}
