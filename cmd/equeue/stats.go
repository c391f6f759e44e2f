package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/equeue-go/equeue"
)

// statsJSON is the JSON form of stats.
type statsJSON struct {
	Broker         string `json:"broker"`
	Topics         int    `json:"topics"`
	InternalTopics int    `json:"internal_topics"`
	// ReplyTopics counts the requesters' reply topics (%REPLY%), which
	// are neither user topics nor retry or dead-letter ones.
	ReplyTopics int   `json:"reply_topics"`
	Queues      int   `json:"queues"`
	Messages    int64 `json:"messages"`
	Groups      int   `json:"groups"`
	Members     int   `json:"members"`
	Lag         int64 `json:"lag"`
	// StoreBytes is the size of the store on disk.
	StoreBytes *int64 `json:"store_bytes,omitempty"`
	// Engine holds the engine's counters (equeue.Stats): a served
	// broker's since it started; with --dir, this command's own (the
	// reads of its --scan).
	Engine *engineJSON `json:"engine,omitempty"`
	// Scan is set with --scan.
	Scan *scanJSON `json:"scan,omitempty"`
}

type engineJSON struct {
	DedupIDs        int64  `json:"dedup_ids"`
	CorruptRecords  uint64 `json:"corrupt_records"`
	ExpiredMessages uint64 `json:"expired_messages"`
	NoSpaceRefusals uint64 `json:"no_space_refusals"`
	// DeletedTopicRetries counts the retry copies the broker's groups
	// skipped because their origin topic was deleted
	// (equeue.Stats.DeletedTopicRetries); they are not expired messages.
	DeletedTopicRetries uint64 `json:"deleted_topic_retries"`
	// LostDedupGroups counts the dedup groups the engine's open found
	// unreadable (equeue.Stats.LostDedupGroups): with --dir, this
	// command's own open of the directory.
	LostDedupGroups uint64 `json:"lost_dedup_groups"`
	// UnsupportedFormatPulls counts pulls refused at a record of a newer
	// format version (equeue.Stats.UnsupportedFormatPulls).
	UnsupportedFormatPulls uint64 `json:"unsupported_format_pulls"`
	// ConsumerHookPanics counts the recovered panics of the hooks of the
	// broker's in-process producers and consumers
	// (equeue.Stats.ConsumerHookPanics).
	ConsumerHookPanics uint64 `json:"consumer_hook_panics"`
	// ParkedDelayedMessages counts the due delayed messages stuck now
	// because no store write can hold their move
	// (equeue.Stats.ParkedDelayedMessages): pending until the engine is
	// opened on a store that takes them.
	ParkedDelayedMessages int64 `json:"parked_delayed_messages"`
}

type scanJSON struct {
	Read    int64 `json:"read"`
	Corrupt int64 `json:"corrupt"`
	Expired int64 `json:"expired"`
	// DeletedTopicRetries counts the retry copies the scan passed because
	// their origin topic was deleted (equeue.PullResult.DeletedTopicRetries).
	DeletedTopicRetries int64 `json:"deleted_topic_retries"`
	// NewerFormat counts the queues whose scan stopped at a record of a
	// newer format version (equeue.ErrUnsupportedFormat), which this
	// build cannot read, nor any message after it in its queue.
	NewerFormat int64 `json:"newer_format_queues"`
}

func (a *app) statsCommand() *cobra.Command {
	var asJSON, scan bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Show engine counters: topics, queues, messages, groups, lag, store size",
		Long: `stats sums up a broker: topics (user topics, the engine's own retry and
dead-letter topics, and request-reply's reply topics, each counted apart),
queues, messages stored, consumer groups, live members, total lag, the size
of the store on disk and the message IDs the topics' dedup windows hold.
Of a served broker (--server) it also shows the engine's counters since
the broker started: corrupt records and expired messages its reads met,
writes refused for a full disk and, when there were any, the retry copies
its groups skipped because their origin topic was deleted and the panics
of its in-process consumers' hooks. When due delayed messages are stuck
because no write of the store can hold their move (parked until a reopen
on a store that takes them), it shows how many.

--scan also reads every stored message and counts those that fail their
checksum (corrupt) or whose time-to-live ran out (expired), the retry
copies of deleted topics (when there are any), and the queues
it could read only up to a record of a newer format version (one a newer
engine wrote), which this build cannot read. It reads the whole store, so
it takes a while on a large one.

The live counters of a running broker (appends, pulls, handler latency)
are served by "equeue serve --metrics".`,
		Example: `  equeue --dir ./data stats
  equeue --server 127.0.0.1:7654 stats --scan --json`,
		Args: args(cobra.NoArgs),
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			return a.withConn(readOnly, func(c *conn) error {
				ctx := cmd.Context()
				st := statsJSON{Broker: a.where()}
				topics, err := c.Topics(ctx)
				if err != nil {
					return err
				}
				for _, t := range topics {
					switch {
					case strings.HasPrefix(t.Name, equeue.RetryTopicPrefix) || strings.HasPrefix(t.Name, equeue.DLQTopicPrefix):
						st.InternalTopics++
					case strings.HasPrefix(t.Name, equeue.ReplyTopicPrefix): // of any namespace
						st.ReplyTopics++
					default:
						st.Topics++
					}
					for _, q := range t.Queues {
						st.Queues++
						st.Messages += q.Messages
					}
				}
				groups, err := c.Groups(ctx)
				if err != nil {
					return err
				}
				st.Groups = len(groups)
				for _, g := range groups {
					st.Members += len(g.Members)
					st.Lag += g.TotalLag()
				}
				if scan {
					s, err := scanAll(ctx, c, topics)
					if err != nil {
						return err
					}
					st.Scan = &s
				}
				var es *equeue.Stats
				if c.engine != nil {
					s := c.engine.Stats()
					es = &s
				} else if rs, ok := c.broker.(interface {
					EngineStats(context.Context) (equeue.Stats, error)
				}); ok {
					if s, err := rs.EngineStats(ctx); err == nil {
						es = &s
					}
				}
				if es != nil {
					st.StoreBytes = &es.StoreBytes
					st.Engine = &engineJSON{DedupIDs: es.DedupIDs, CorruptRecords: es.CorruptRecords,
						ExpiredMessages: es.ExpiredMessages, NoSpaceRefusals: es.NoSpaceRefusals, DeletedTopicRetries: es.DeletedTopicRetries, LostDedupGroups: es.LostDedupGroups,
						UnsupportedFormatPulls: es.UnsupportedFormatPulls, ConsumerHookPanics: es.ConsumerHookPanics,
						ParkedDelayedMessages: es.ParkedDelayedMessages}
				}
				if asJSON {
					return writeJSONIndent(a.stdout, st)
				}
				t := newTable(a.stdout)
				t.row("broker:", st.Broker)
				topicsRow := fmt.Sprintf("%d (+%d retry/dead-letter", st.Topics, st.InternalTopics)
				if st.ReplyTopics > 0 { // shown only when requesters have them
					topicsRow += fmt.Sprintf(", +%d reply", st.ReplyTopics)
				}
				t.row("topics:", topicsRow+")")
				t.row("queues:", st.Queues)
				t.row("messages stored:", st.Messages)
				t.row("groups:", fmt.Sprintf("%d (%d live members)", st.Groups, st.Members))
				t.row("total lag:", st.Lag)
				if st.StoreBytes != nil {
					t.row("store size:", humanBytes(*st.StoreBytes))
				}
				if st.Engine != nil {
					t.row("dedup IDs held:", st.Engine.DedupIDs)
					if st.Engine.LostDedupGroups > 0 { // shown only when it happened
						t.row("dedup groups lost:", fmt.Sprintf("%d (found unreadable at open; their IDs are no longer deduplicated)", st.Engine.LostDedupGroups))
					}
					if st.Engine.ParkedDelayedMessages > 0 { // shown only when there are any
						t.row("delayed messages parked:", fmt.Sprintf("%d (due, too large for any write of the store: pending until a reopen on a store that takes them)", st.Engine.ParkedDelayedMessages))
					}
					if c.engine == nil { // a served broker's counters since it started
						t.row("corrupt records seen:", st.Engine.CorruptRecords)
						t.row("expired messages seen:", st.Engine.ExpiredMessages)
						t.row("no-space refusals:", st.Engine.NoSpaceRefusals)
						if st.Engine.DeletedTopicRetries > 0 { // shown only when it happened
							t.row("retry copies of deleted topics skipped:", st.Engine.DeletedTopicRetries)
						}
						if st.Engine.UnsupportedFormatPulls > 0 { // shown only when it happened
							t.row("pulls refused, newer record format:", fmt.Sprintf("%d (consumers are stopped at records this build cannot read)", st.Engine.UnsupportedFormatPulls))
						}
						if st.Engine.ConsumerHookPanics > 0 { // shown only when it happened
							t.row("consumer hook panics:", fmt.Sprintf("%d (recovered: of in-process producers and consumers, which log theirs)", st.Engine.ConsumerHookPanics))
						}
					}
				}
				if st.Scan != nil {
					t.row("messages read:", st.Scan.Read)
					t.row("corrupt records:", st.Scan.Corrupt)
					t.row("expired messages:", st.Scan.Expired)
					if st.Scan.DeletedTopicRetries > 0 { // shown only when there are any
						t.row("retry copies of deleted topics:", st.Scan.DeletedTopicRetries)
					}
					if st.Scan.NewerFormat > 0 { // shown only when it happened
						t.row("newer-format stops:", fmt.Sprintf("%d (queues read up to a record of a newer format version, which this build cannot read nor pass)", st.Scan.NewerFormat))
					}
				}
				return t.flush()
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&scan, "scan", false, "read every message to count corrupt and expired ones")
	return cmd
}

// scanAll reads every stored message of every queue. A queue that holds a
// record of a newer format version is read up to it and counted in
// NewerFormat: that record is not damage, and the other queues are read.
func scanAll(ctx context.Context, b equeue.Broker, topics []equeue.TopicInfo) (scanJSON, error) {
	var s scanJSON
	for _, t := range topics {
		for _, q := range t.Queues {
			off := q.MinOffset
			for off < q.MaxOffset {
				res, err := b.Pull(ctx, &equeue.PullRequest{Topic: t.Name, Queue: q.ID, Offset: off, Max: equeue.MaxPullBatch})
				if errors.Is(err, equeue.ErrUnsupportedFormat) {
					s.NewerFormat++
					break
				}
				if err != nil {
					return s, fmt.Errorf("scan %s/%d at %d: %w", t.Name, q.ID, off, err)
				}
				s.Read += int64(len(res.Messages))
				s.Corrupt += int64(len(res.Corrupt))
				s.Expired += int64(res.Expired)
				s.DeletedTopicRetries += int64(res.DeletedTopicRetries)
				if res.NextOffset <= off || res.Status == equeue.PullNoNewMessage {
					break
				}
				off = res.NextOffset
			}
		}
	}
	return s, nil
}

// humanBytes prints a size in binary units.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB (%d bytes)", float64(n)/float64(div), "KMGTPE"[exp], n)
}
