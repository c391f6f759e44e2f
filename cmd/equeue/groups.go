package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/equeue-go/equeue"
)

func (a *app) groupsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "groups [NAME]",
		Short: "Show consumer groups: members, assignment, offsets and lag",
		Long: `groups describes one consumer group, or every group the engine knows: its
model, subscriptions, live members and the queues each owns, and per queue
the committed offset (the next message the group will get; - when the
group has none yet), the queue's max offset and the lag between them.`,
		Example: `  equeue --dir ./data groups
  equeue --server 127.0.0.1:7654 groups billing --json`,
		Args: argCount(0, 1, "an optional group NAME"),
		RunE: runE(func(cmd *cobra.Command, argv []string) error {
			return a.withConn(readOnly, func(c *conn) error {
				var groups []equeue.GroupInfo
				if len(argv) == 1 {
					g, err := c.Group(cmd.Context(), argv[0])
					if err != nil {
						return err
					}
					groups = []equeue.GroupInfo{g}
				} else {
					var err error
					if groups, err = c.Groups(cmd.Context()); err != nil {
						return err
					}
				}
				if asJSON {
					out := make([]groupJSON, 0, len(groups))
					for _, g := range groups {
						out = append(out, toGroupJSON(g))
					}
					if len(argv) == 1 {
						return writeJSONIndent(a.stdout, out[0])
					}
					return writeJSONIndent(a.stdout, out)
				}
				if len(groups) == 0 {
					fmt.Fprintln(a.stdout, "no consumer groups yet (a group is made when its first consumer joins)")
					return nil
				}
				for i, g := range groups {
					if i > 0 {
						fmt.Fprintln(a.stdout)
					}
					if err := printGroup(a.stdout, g); err != nil {
						return err
					}
				}
				return nil
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(a.groupsDeleteCommand())
	return cmd
}

func printGroup(w io.Writer, g equeue.GroupInfo) error {
	fmt.Fprintf(w, "group %s (%s, strategy %s, epoch %d)\n", g.Name, g.Model, orDash(g.Strategy), g.Epoch)
	subs := make([]string, 0, len(g.Subscriptions))
	for _, s := range g.Subscriptions {
		subs = append(subs, fmt.Sprintf("%s [%s]", s.Topic, orDash(s.Filter)))
	}
	fmt.Fprintf(w, "subscriptions: %s\n", orDash(strings.Join(subs, ", ")))
	if len(g.Members) == 0 {
		fmt.Fprintln(w, "members: none")
	} else {
		fmt.Fprintf(w, "members: %d\n", len(g.Members))
		t := newTable(w, "  MEMBER", "QUEUES")
		for _, m := range g.Members {
			qs := make([]string, 0, len(m.Queues))
			for _, q := range m.Queues {
				qs = append(qs, q.String())
			}
			t.row("  "+m.ID, orDash(strings.Join(qs, " ")))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	owner := "OWNER"
	if g.Model == equeue.Broadcasting {
		owner = "MEMBER"
	}
	t := newTable(w, "TOPIC", "QUEUE", owner, "COMMITTED", "MAX OFFSET", "LAG")
	for _, q := range g.Queues {
		committed := "-"
		if q.Committed >= 0 {
			committed = fmt.Sprint(q.Committed)
		}
		t.row(q.Topic, q.Queue, orDash(q.Owner), committed, q.MaxOffset, q.Lag)
	}
	if err := t.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "total lag: %d\n", g.TotalLag())
	return err
}

// groupJSON is the JSON form of a group.
type groupJSON struct {
	Name          string             `json:"name"`
	Model         string             `json:"model"`
	Strategy      string             `json:"strategy"`
	Epoch         int64              `json:"epoch"`
	Subscriptions []subscriptionJSON `json:"subscriptions"`
	Members       []memberJSON       `json:"members"`
	Queues        []groupQueueJSON   `json:"queues"`
	Lag           int64              `json:"lag"`
}

type subscriptionJSON struct {
	Topic  string `json:"topic"`
	Filter string `json:"filter"`
}

type memberJSON struct {
	ID     string   `json:"id"`
	Queues []string `json:"queues"`
}

type groupQueueJSON struct {
	Topic     string `json:"topic"`
	Queue     int    `json:"queue"`
	Owner     string `json:"owner"`
	Committed int64  `json:"committed"`
	MaxOffset int64  `json:"max_offset"`
	Lag       int64  `json:"lag"`
}

func toGroupJSON(g equeue.GroupInfo) groupJSON {
	out := groupJSON{Name: g.Name, Model: g.Model.String(), Strategy: g.Strategy, Epoch: g.Epoch,
		Subscriptions: []subscriptionJSON{}, Members: []memberJSON{}, Queues: []groupQueueJSON{}, Lag: g.TotalLag()}
	for _, s := range g.Subscriptions {
		out.Subscriptions = append(out.Subscriptions, subscriptionJSON{Topic: s.Topic, Filter: s.Filter})
	}
	for _, m := range g.Members {
		mj := memberJSON{ID: m.ID, Queues: []string{}}
		for _, q := range m.Queues {
			mj.Queues = append(mj.Queues, q.String())
		}
		out.Members = append(out.Members, mj)
	}
	for _, q := range g.Queues {
		out.Queues = append(out.Queues, groupQueueJSON{Topic: q.Topic, Queue: q.Queue, Owner: q.Owner, Committed: q.Committed, MaxOffset: q.MaxOffset, Lag: q.Lag})
	}
	return out
}
