package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/equeue-go/equeue"
)

func (a *app) topicCommand() *cobra.Command {
	cmd := groupCommand("topic", "Create, list, describe, grow and delete topics",
		`A topic is a named stream split into queues (1-256). Each queue is an ordered
log with dense offsets from 0; messages with the same key go to the same queue.`)
	cmd.Example = `  equeue --dir ./data topic create orders --queues 4
  equeue --dir ./data topic list
  equeue --dir ./data topic describe orders`
	cmd.AddCommand(a.topicCreate(), a.topicList(), a.topicDescribe(), a.topicAddQueues(), a.topicWritable(), a.topicDelete(), a.topicSetLimits())
	return cmd
}

// withConn runs f on an open broker and closes it. mode says what f does
// to an engine directory (see openMode).
func (a *app) withConn(mode openMode, f func(c *conn) error) (err error) {
	c, err := a.connect(mode)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := c.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return f(c)
}

// topicCreatorWith is implemented by brokers that create topics with options.
type topicCreatorWith interface {
	CreateTopicWith(ctx context.Context, name string, o equeue.TopicOptions) error
}

func (a *app) topicCreate() *cobra.Command {
	var (
		queues     int
		priorities int
		dedup      time.Duration
		lf         *limitFlags
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Long: `create makes a topic with --queues queues (default: the engine's default, 4).

--dedup-window makes the topic idempotent for messages that carry their own
ID (produce --id): a message whose ID was stored within the window is
acknowledged with its original position and not stored again.

--priorities N gives every queue N priority lanes (2 to 16, fixed at
creation): produce --priority P stores a message in lane P, and consumers
get a queue's higher lanes first. Each lane is listed by topic describe as
a queue ID of its own (queue ID = queue * N + lane).

--max-messages, --max-bytes, --overflow, --default-ttl, --retention-age and
--unconsumed set the topic's limits (see topic set-limits, which changes
them later).`,
		Example: `  equeue --dir ./data topic create orders --queues 8
  equeue --dir ./data topic create payments --dedup-window 10m
  equeue --dir ./data topic create jobs --max-messages 10000 --overflow reject --default-ttl 1h
  equeue --dir ./data topic create tasks --queues 2 --priorities 3`,
		Args: argCount(1, 1, "NAME"),
		RunE: runE(func(cmd *cobra.Command, argv []string) error {
			if cmd.Flags().Changed("queues") && (queues < 1 || queues > equeue.MaxQueuesPerTopic) {
				return usageErrorf("--queues %d: a topic has 1 to %d queues (leave --queues out for the engine's default, 4)", queues, equeue.MaxQueuesPerTopic)
			}
			if dedup < 0 {
				return usageErrorf("--dedup-window must not be negative")
			}
			if cmd.Flags().Changed("priorities") && (priorities < 2 || priorities > equeue.MaxPriorities) {
				return usageErrorf("--priorities %d: a topic has 2 to %d priority lanes per queue (leave --priorities out for none)", priorities, equeue.MaxPriorities)
			}
			limits, err := lf.limits()
			if err != nil {
				return err
			}
			name := argv[0]
			return a.withConn(create, func(c *conn) error {
				ctx := cmd.Context()
				if dedup > 0 || priorities > 0 || !limits.IsZero() {
					cw, ok := c.broker.(topicCreatorWith)
					if !ok {
						return fmt.Errorf("--dedup-window, --priorities and topic limits cannot be set through this connection; create the topic with --dir while the broker is stopped")
					}
					if err := cw.CreateTopicWith(ctx, name, equeue.TopicOptions{Queues: queues, Priorities: priorities, DedupWindow: dedup, Limits: limits}); err != nil {
						return err
					}
				} else if err := c.CreateTopic(ctx, name, queues); err != nil {
					return err
				}
				ti, err := c.Topic(ctx, name)
				if err != nil {
					return err
				}
				if ti.Priorities > 1 {
					fmt.Fprintf(a.stdout, "created topic %s with %d queues of %d priority lanes\n", name, len(ti.Queues)/ti.Priorities, ti.Priorities)
					return nil
				}
				fmt.Fprintf(a.stdout, "created topic %s with %d queues\n", name, len(ti.Queues))
				return nil
			})
		}),
	}
	cmd.Flags().IntVar(&queues, "queues", 0, "number of queues, 1-256 (default: the engine's default, 4)")
	cmd.Flags().IntVar(&priorities, "priorities", 0, "priority lanes per queue, 2-16 (default: none)")
	cmd.Flags().DurationVar(&dedup, "dedup-window", 0, "store a message ID only once within this window (e.g. 10m); 0: off")
	lf = addLimitFlags(cmd.Flags())
	return cmd
}

// topicJSON is the JSON form of a topic.
type topicJSON struct {
	Name string `json:"name"`
	// ID tells this topic from one deleted before it under the same name
	// (equeue.TopicInfo.ID).
	ID        uint32      `json:"id"`
	CreatedAt time.Time   `json:"created_at"`
	Messages  int64       `json:"messages"`
	Queues    []queueJSON `json:"queues"`
	Limits    *limitsJSON `json:"limits,omitempty"`
	// Priorities is the lanes per queue of a topic with priorities.
	Priorities int `json:"priorities,omitempty"`
}

type queueJSON struct {
	ID int `json:"id"`
	// Queue and Lane place a queue ID of a topic with priorities.
	Queue     *int  `json:"queue,omitempty"`
	Lane      *int  `json:"lane,omitempty"`
	MinOffset int64 `json:"min_offset"`
	MaxOffset int64 `json:"max_offset"`
	Messages  int64 `json:"messages"`
	Writable  bool  `json:"writable"`
}

func toTopicJSON(ti equeue.TopicInfo) topicJSON {
	out := topicJSON{Name: ti.Name, ID: ti.ID, CreatedAt: ti.CreatedAt, Queues: []queueJSON{}, Limits: toLimitsJSON(ti.Limits)}
	if ti.Priorities > 1 {
		out.Priorities = ti.Priorities
	}
	for _, q := range ti.Queues {
		n := q.Messages
		out.Messages += n
		qj := queueJSON{ID: q.ID, MinOffset: q.MinOffset, MaxOffset: q.MaxOffset, Messages: n, Writable: q.Writable}
		if p := out.Priorities; p > 1 {
			queue, lane := q.ID/p, q.ID%p
			qj.Queue, qj.Lane = &queue, &lane
		}
		out.Queues = append(out.Queues, qj)
	}
	return out
}

func (a *app) topicList() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topics with their queue and message counts",
		Long: `list prints every topic, its queues and the number of messages stored.
The engine's own topics are listed too: %RETRY%<group> holds a group's
messages waiting to be retried, %DLQ%<group> its dead letters.`,
		Example: `  equeue --dir ./data topic list
  equeue --server 127.0.0.1:7654 topic list --json`,
		Args: args(cobra.NoArgs),
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			return a.withConn(readOnly, func(c *conn) error {
				topics, err := c.Topics(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					out := make([]topicJSON, 0, len(topics))
					for _, ti := range topics {
						out = append(out, toTopicJSON(ti))
					}
					return writeJSONIndent(a.stdout, out)
				}
				if len(topics) == 0 {
					fmt.Fprintln(a.stdout, "no topics (create one with: equeue topic create NAME)")
					return nil
				}
				t := newTable(a.stdout, "TOPIC", "QUEUES", "MESSAGES", "CREATED")
				for _, ti := range topics {
					tj := toTopicJSON(ti)
					t.row(ti.Name, len(ti.Queues), tj.Messages, formatTime(ti.CreatedAt))
				}
				return t.flush()
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) topicDescribe() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "describe NAME",
		Short:   "Show a topic's queues and their offsets",
		Example: `  equeue --dir ./data topic describe orders`,
		Args:    argCount(1, 1, "NAME"),
		RunE: runE(func(cmd *cobra.Command, argv []string) error {
			return a.withConn(readOnly, func(c *conn) error {
				ti, err := c.Topic(cmd.Context(), argv[0])
				if err != nil {
					return err
				}
				tj := toTopicJSON(ti)
				if asJSON {
					return writeJSONIndent(a.stdout, tj)
				}
				fmt.Fprintf(a.stdout, "topic:    %s\ncreated:  %s\nqueues:   %d\nmessages: %d\n", ti.Name, formatTime(ti.CreatedAt), len(ti.Queues), tj.Messages)
				if tj.Priorities > 1 {
					fmt.Fprintf(a.stdout, "priorities: %d lanes per queue (queue ID = queue * %d + lane; higher lanes first)\n", tj.Priorities, tj.Priorities)
				}
				if !ti.Limits.IsZero() {
					fmt.Fprintf(a.stdout, "limits:   %s\n", ti.Limits)
				}
				fmt.Fprintln(a.stdout)
				if tj.Priorities > 1 {
					t := newTable(a.stdout, "QUEUE ID", "QUEUE", "LANE", "MIN OFFSET", "MAX OFFSET", "MESSAGES", "WRITABLE")
					for _, q := range tj.Queues {
						t.row(q.ID, *q.Queue, *q.Lane, q.MinOffset, q.MaxOffset, q.Messages, q.Writable)
					}
					return t.flush()
				}
				t := newTable(a.stdout, "QUEUE", "MIN OFFSET", "MAX OFFSET", "MESSAGES", "WRITABLE")
				for _, q := range tj.Queues {
					t.row(q.ID, q.MinOffset, q.MaxOffset, q.Messages, q.Writable)
				}
				return t.flush()
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) topicAddQueues() *cobra.Command {
	return &cobra.Command{
		Use:   "add-queues NAME N",
		Short: "Add N queues to a live topic",
		Long: `add-queues grows a topic by N queues. Producers use them from their next
route refresh; consumer groups rebalance at once. Note that messages of a
key may move to another queue, so per-key order holds only from then on.`,
		Example: `  equeue --dir ./data topic add-queues orders 4`,
		Args:    argCount(2, 2, "NAME N"),
		RunE: runE(func(cmd *cobra.Command, argv []string) error {
			n, err := strconv.Atoi(argv[1])
			if err != nil || n < 1 {
				return usageErrorf("N must be a positive number of queues, got %q", argv[1])
			}
			return a.withConn(readWrite, func(c *conn) error {
				if err := c.AddQueues(cmd.Context(), argv[0], n); err != nil {
					if refusedAsInvalid(err) {
						return fmt.Errorf("queue count N %d: %w", n, err) // more queues than a topic holds
					}
					return err
				}
				ti, err := c.Topic(cmd.Context(), argv[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "topic %s now has %d queues\n", argv[0], len(ti.Queues))
				return nil
			})
		}),
	}
}

func (a *app) topicWritable() *cobra.Command {
	return &cobra.Command{
		Use:   "set-writable NAME QUEUE true|false",
		Short: "Open or close one queue to producers",
		Long: `set-writable closes a queue to producers (false) or opens it again (true).
A closed queue keeps its messages and is still consumed, so it can be
drained before it is retired.`,
		Example: `  equeue --dir ./data topic set-writable orders 3 false`,
		Args:    argCount(3, 3, "NAME QUEUE true|false"),
		RunE: runE(func(cmd *cobra.Command, argv []string) error {
			q, err := strconv.Atoi(argv[1])
			if err != nil || q < 0 {
				return usageErrorf("QUEUE must be a queue number, got %q", argv[1])
			}
			w, err := strconv.ParseBool(argv[2])
			if err != nil {
				return usageErrorf("the last argument must be true or false, got %q", argv[2])
			}
			return a.withConn(readWrite, func(c *conn) error {
				if err := c.SetQueueWritable(cmd.Context(), argv[0], q, w); err != nil {
					return err
				}
				state := "closed to"
				if w {
					state = "open to"
				}
				fmt.Fprintf(a.stdout, "queue %s/%d is %s producers\n", argv[0], q, state)
				return nil
			})
		}),
	}
}

func (a *app) topicDelete() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a topic and all its messages",
		Long: `delete removes a topic, every message in it and every group's offsets of
it. It cannot be undone. On a terminal it asks for confirmation; otherwise
(a script, a pipe) it needs --yes.`,
		Example: `  equeue --dir ./data topic delete orders
  equeue --dir ./data topic delete orders --yes`,
		Args: argCount(1, 1, "NAME"),
		RunE: runE(func(cmd *cobra.Command, argv []string) error {
			name := argv[0]
			if !yes && !a.stdinIsTerminal() {
				return usageErrorf("topic delete removes topic %s and all its messages: confirm with --yes (standard input is not a terminal, so it cannot ask)", name)
			}
			return a.withConn(readWrite, func(c *conn) error {
				ctx := cmd.Context()
				if !yes {
					ti, err := c.Topic(ctx, name)
					if err != nil {
						return err
					}
					ok, err := a.confirm(fmt.Sprintf("Delete topic %s, its %d queues and %d messages? [y/N] ", name, len(ti.Queues), toTopicJSON(ti).Messages))
					if err != nil {
						return err
					}
					if !ok {
						fmt.Fprintf(a.stdout, "topic %s kept\n", name)
						return nil
					}
				}
				if err := c.DeleteTopic(ctx, name); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "deleted topic %s\n", name)
				return nil
			})
		}),
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete without asking")
	return cmd
}
