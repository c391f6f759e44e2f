package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

func (a *app) dlqCommand() *cobra.Command {
	cmd := groupCommand("dlq", "List and redrive a group's dead letters",
		`A message that failed too many times (or whose handler gave up with
equeue.DeadLetter) goes to its group's dead-letter topic %DLQ%<group>, with
its origin and last error. dlq list shows them; dlq redrive sends them back
to the group through its retry topic (with --to-topic, to their topic),
each at most once.`)
	cmd.Example = `  equeue --dir ./data dlq list billing
  equeue --dir ./data dlq redrive billing --offset 0 --offset 3
  equeue --dir ./data dlq redrive billing --all`
	cmd.AddCommand(a.dlqList(), a.dlqRedrive())
	return cmd
}

// deadLetterJSON is the JSON form of a dead letter.
type deadLetterJSON struct {
	Offset int64 `json:"offset"`
	// Priority is the priority lane the message was stored in (0 on a
	// topic without priorities): equeue.DLQEntry's Message.Priority.
	Priority  int         `json:"priority"`
	Attempts  int         `json:"attempts"`
	Redriven  bool        `json:"redriven"`
	LastError string      `json:"last_error"`
	Message   messageJSON `json:"message"`
}

func (a *app) dlqList() *cobra.Command {
	var (
		from   int64
		max    int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list GROUP",
		Short: "List a group's dead letters",
		Long: `list prints up to --max dead letters of GROUP from offset --from of its
dead-letter topic: the offset to redrive it by, where it came from
(topic/queue:offset), the priority lane it was stored in (0 on a topic
without priorities), how many attempts it had, whether it was redriven,
its last error and the start of its body.`,
		Example: `  equeue --dir ./data dlq list billing
  equeue --dir ./data dlq list billing --from 100 --max 50 --json`,
		Args: argCount(1, 1, "GROUP"),
		RunE: runE(func(cmd *cobra.Command, argv []string) error {
			if from < 0 {
				return usageErrorf("--from must not be negative")
			}
			if max < 1 || max > equeue.MaxPullBatch {
				return usageErrorf("--max must be 1 to %d", equeue.MaxPullBatch)
			}
			group := argv[0]
			return a.withConn(readOnly, func(c *conn) error {
				dls, err := c.ListDeadLetters(cmd.Context(), group, equeue.ListDeadLettersRequest{From: from, Max: max})
				if err != nil {
					return err
				}
				if len(dls) == 0 {
					// No dead letters, or no such group: a typo in the
					// group name must not look like a clean bill.
					if _, err := c.Group(cmd.Context(), group); err != nil {
						return err
					}
				}
				if asJSON {
					out := make([]deadLetterJSON, 0, len(dls))
					for _, dl := range dls {
						out = append(out, deadLetterJSON{Offset: dl.Offset, Priority: dl.Message.Priority, Attempts: dl.Attempts, Redriven: dl.Redriven, LastError: dl.LastError, Message: toMessageJSON(dl.Message)})
					}
					return writeJSONIndent(a.stdout, out)
				}
				if len(dls) == 0 {
					fmt.Fprintf(a.stdout, "no dead letters for group %s from offset %d\n", group, from)
					return nil
				}
				t := newTable(a.stdout, "OFFSET", "FROM", "PRIORITY", "ATTEMPTS", "REDRIVEN", "LAST ERROR", "BODY")
				for _, dl := range dls {
					m := dl.Message
					t.row(dl.Offset, fmt.Sprintf("%s/%d:%d", m.Topic, m.Queue, m.Offset), m.Priority, dl.Attempts, dl.Redriven, orDash(shorten(dl.LastError, 40)), shorten(string(m.Body), 40))
				}
				if err := t.flush(); err != nil {
					return err
				}
				// A page may end before --max (the engine and a broker cut
				// pages by bytes too): look one dead letter further.
				next := dls[len(dls)-1].Offset + 1
				more, err := c.ListDeadLetters(cmd.Context(), group, equeue.ListDeadLettersRequest{From: next, Max: 1})
				switch {
				case err == nil && len(more) == 0:
				case err == nil || errors.Is(err, equeue.ErrMessageTooLarge):
					fmt.Fprintf(a.stdout, "more follow: dlq list %s --from %d\n", group, next)
				default:
					fmt.Fprintf(a.stdout, "more may follow: dlq list %s --from %d\n", group, next)
				}
				return nil
			})
		}),
	}
	cmd.Flags().Int64Var(&from, "from", 0, "first dead-letter `OFFSET` to list")
	cmd.Flags().IntVar(&max, "max", 32, "most dead letters to list, `N` from 1 to 1024")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) dlqRedrive() *cobra.Command {
	var (
		offsets []int64
		all     bool
		toTopic bool
	)
	cmd := &cobra.Command{
		Use:   "redrive GROUP (--offset N... | --all) [--to-topic]",
		Short: "Send dead letters back to their group",
		Long: `redrive sends the dead letters at the given offsets (as "dlq list" shows
them), or all of them, back to the group: into its retry topic, due at
once, where only this group gets them, as it saw them before (topic, queue,
offset, ID, body, tag, keys and properties), with MaxAttempts new tries.
Other groups of the same topic, which handled them already, do not get
them again.

--to-topic sends them back to their original topic and queue instead, as
fresh messages with their ID, body, tag, keys and properties, for every
group subscribed to it. A group that consumes no retry topic (a
broadcasting or orderly one) can only be redriven so.

Each dead letter is redriven at most once; those already redriven are
skipped. One whose redriven mark was lost (the engine logs the group and
offset) is listed as redriven and skipped by --all; naming it with
--offset sends it back and marks it soundly.`,
		Example: `  equeue --dir ./data dlq redrive billing --offset 0 --offset 3
  equeue --server 127.0.0.1:7654 dlq redrive billing --all
  equeue --dir ./data dlq redrive audit --all --to-topic`,
		Args: argCount(1, 1, "GROUP"),
		RunE: runE(func(cmd *cobra.Command, argv []string) error {
			if all == (len(offsets) > 0) {
				return usageErrorf("give --offset N (repeatable) or --all")
			}
			for _, o := range offsets {
				if o < 0 {
					return usageErrorf("--offset %d: offsets are not negative", o)
				}
			}
			group := argv[0]
			return a.withConn(readWrite, func(c *conn) error {
				ctx := cmd.Context()
				g, err := c.Group(ctx, group)
				if err != nil {
					return err
				}
				n, err := c.Redrive(ctx, group, equeue.RedriveRequest{Offsets: offsets, All: all, ToTopic: toTopic})
				if hinted := redriveError(err, toTopic, g); hinted != err {
					return hinted
				}
				if errors.Is(err, equeue.ErrTopicNotFound) {
					// The group exists but never dead-lettered anything.
					if all {
						n, err = 0, nil
					} else {
						return fmt.Errorf("group %s has no dead letters (see \"equeue dlq list %s\")", group, group)
					}
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "redrove %d dead letters of group %s\n", n, group)
				return nil
			})
		}),
	}
	cmd.Flags().Int64SliceVar(&offsets, "offset", nil, "dead-letter `OFFSET` to redrive, as \"dlq list\" shows it (repeatable, or comma-separated)")
	cmd.Flags().BoolVar(&all, "all", false, "redrive every dead letter not redriven yet")
	cmd.Flags().BoolVar(&toTopic, "to-topic", false, "send them back to their original topics, for every group subscribed there, instead of the group's retry topic")
	return cmd
}

// redriveError is err, a redrive's error, with a hint at --to-topic when
// it is a refusal of a redrive into the retry topic of g, a group that
// does not consume it; otherwise err itself. A call refused for its
// metadata (remote.ErrMetadataTooLarge, which matches
// equeue.ErrInvalidArgument too) is not such a refusal: run's hint names
// its cause.
func redriveError(err error, toTopic bool, g equeue.GroupInfo) error {
	if errors.Is(err, equeue.ErrInvalidArgument) && !errors.Is(err, remote.ErrMetadataTooLarge) && !toTopic && !consumesRetryTopic(g) {
		return fmt.Errorf("%w (give --to-topic)", err)
	}
	return err
}

// consumesRetryTopic reports whether g's members consume its retry topic,
// where a redrive without --to-topic sends its dead letters.
func consumesRetryTopic(g equeue.GroupInfo) bool {
	return slices.ContainsFunc(g.Subscriptions, func(s equeue.Subscription) bool { return s.Topic == equeue.RetryTopic(g.Name) })
}

// shorten cuts s to at most n runes on one line.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if !utf8.ValidString(s) {
		return "(binary)"
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
