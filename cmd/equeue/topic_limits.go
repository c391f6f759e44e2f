package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/equeue-go/equeue"
)

// limitFlags are the per-topic limit flags of topic create and
// topic set-limits.
type limitFlags struct {
	maxMessages  int64
	maxBytes     int64
	overflow     string
	defaultTTL   time.Duration
	retentionAge time.Duration
	unconsumed   string
}

func addLimitFlags(f *pflag.FlagSet) *limitFlags {
	l := &limitFlags{}
	f.Int64Var(&l.maxMessages, "max-messages", 0, "most messages the topic holds over its queues (0: no limit)")
	f.Int64Var(&l.maxBytes, "max-bytes", 0, "most bytes of stored messages (body, key, tag, properties and ID, plus 21 bytes of fixed fields each) the topic holds over its queues (0: no limit)")
	f.StringVar(&l.overflow, "overflow", "drop-oldest", "what a send beyond --max-messages or --max-bytes does: drop-oldest (delete the oldest) or reject (refuse the send)")
	f.DurationVar(&l.defaultTTL, "default-ttl", 0, "time-to-live of messages sent without one (e.g. 1h; 0: none)")
	f.DurationVar(&l.retentionAge, "retention-age", 0, "keep messages this long instead of the engine's retention (negative: no age limit; 0: the engine's)")
	f.StringVar(&l.unconsumed, "unconsumed", "default", "retention of messages a subscribed group has not consumed: keep, drop, or default (the engine's policy)")
	return l
}

// limits returns the limits the flags give.
func (l *limitFlags) limits() (equeue.TopicLimits, error) {
	switch {
	case l.maxMessages < 0:
		return equeue.TopicLimits{}, usageErrorf("--max-messages %d: must not be negative (0: no limit)", l.maxMessages)
	case l.maxBytes < 0:
		return equeue.TopicLimits{}, usageErrorf("--max-bytes %d: must not be negative (0: no limit)", l.maxBytes)
	case l.defaultTTL < 0:
		return equeue.TopicLimits{}, usageErrorf("--default-ttl %s: must not be negative (0: none)", l.defaultTTL)
	}
	p, err := equeue.ParseOverflowPolicy(l.overflow)
	if err != nil {
		return equeue.TopicLimits{}, usageErrorf("--overflow %q: use drop-oldest or reject", l.overflow)
	}
	u, err := equeue.ParseUnconsumedPolicy(l.unconsumed)
	if err != nil {
		return equeue.TopicLimits{}, usageErrorf("--unconsumed %q: use keep, drop or default", l.unconsumed)
	}
	out := equeue.TopicLimits{MaxMessages: l.maxMessages, MaxBytes: l.maxBytes, Overflow: p, DefaultTTL: l.defaultTTL,
		RetentionAge: l.retentionAge, Unconsumed: u}
	if err := out.Validate(); err != nil {
		return equeue.TopicLimits{}, usageErrorf("%v", err)
	}
	if out.MaxMessages == 0 && out.MaxBytes == 0 {
		out.Overflow = equeue.OverflowDropOldest // no limit, no policy
	}
	return out, nil
}

// topicLimiter is implemented by brokers that set topic limits (the engine
// and remote.Client).
type topicLimiter interface {
	SetTopicLimits(ctx context.Context, name string, l equeue.TopicLimits) error
}

func (a *app) topicSetLimits() *cobra.Command {
	var lf *limitFlags
	cmd := &cobra.Command{
		Use:   "set-limits NAME",
		Short: "Set a topic's message and byte limits, overflow policy, default TTL and retention",
		Long: `set-limits replaces a topic's limits with those the flags give; flags left
out clear theirs. With --max-messages the topic holds at most that many
messages over its queues, with --max-bytes at most that many bytes of
stored messages: --overflow reject refuses sends beyond them (error: topic
full), drop-oldest (the default) stores them and deletes the oldest
messages of the largest queues, at once when a limit is lowered.
--unconsumed keep or drop overrides the engine's choice of keeping
messages a subscribed group has not consumed yet.`,
		Example: `  equeue --dir ./data topic set-limits orders --max-messages 100000 --overflow reject
  equeue --dir ./data topic set-limits uploads --max-bytes 1073741824
  equeue --dir ./data topic set-limits events --default-ttl 1h --retention-age 24h --unconsumed keep
  equeue --dir ./data topic set-limits orders   # clear every limit`,
		Args: argCount(1, 1, "NAME"),
		RunE: runE(func(cmd *cobra.Command, argv []string) error {
			l, err := lf.limits()
			if err != nil {
				return err
			}
			return a.withConn(readWrite, func(c *conn) error {
				tl, ok := c.broker.(topicLimiter)
				if !ok {
					return fmt.Errorf("this broker cannot set topic limits")
				}
				if err := tl.SetTopicLimits(cmd.Context(), argv[0], l); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "topic %s limits: %s\n", argv[0], l)
				return nil
			})
		}),
	}
	lf = addLimitFlags(cmd.Flags())
	return cmd
}

// limitsJSON is the JSON form of a topic's limits.
type limitsJSON struct {
	MaxMessages  int64  `json:"max_messages,omitempty"`
	MaxBytes     int64  `json:"max_bytes,omitempty"`
	Overflow     string `json:"overflow,omitempty"`
	DefaultTTL   string `json:"default_ttl,omitempty"`
	RetentionAge string `json:"retention_age,omitempty"`
	Unconsumed   string `json:"unconsumed,omitempty"`
}

func toLimitsJSON(l equeue.TopicLimits) *limitsJSON {
	if l.IsZero() {
		return nil
	}
	out := &limitsJSON{MaxMessages: l.MaxMessages, MaxBytes: l.MaxBytes}
	if l.MaxMessages > 0 || l.MaxBytes > 0 {
		out.Overflow = l.Overflow.String()
	}
	if l.Unconsumed != equeue.UnconsumedDefault {
		out.Unconsumed = l.Unconsumed.String()
	}
	if l.DefaultTTL > 0 {
		out.DefaultTTL = l.DefaultTTL.String()
	}
	if l.RetentionAge != 0 {
		out.RetentionAge = l.RetentionAge.String()
	}
	return out
}
