package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/equeue-go/equeue"
)

func (a *app) resetOffsetsCommand() *cobra.Command {
	var (
		to      string
		offsets []string
	)
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP (--to earliest|latest|TIME | --offset TOPIC/QUEUE=N...)",
		Short: "Move a consumer group's committed offsets",
		Long: `reset-offsets moves where a consumer group continues:

  --to earliest   every queue from its oldest stored message (replay all)
  --to latest     every queue from its end (skip what is pending)
  --to TIME       every queue from the first message stored at or after an
                  RFC 3339 time, e.g. 2026-01-02T15:04:05Z
  --offset TOPIC/QUEUE=N   set one queue's offset (repeatable); other
                  queues keep theirs

The change is stored at once; live members drop what they hold and restart
from the new offsets. It prints the group afterwards.`,
		Example: `  equeue --dir ./data reset-offsets billing --to earliest
  equeue --dir ./data reset-offsets billing --to 2026-01-02T15:04:05Z
  equeue --server 127.0.0.1:7654 reset-offsets billing --offset orders/0=120 --offset orders/1=98`,
		Args: argCount(1, 1, "GROUP"),
		RunE: runE(func(cmd *cobra.Command, argv []string) error {
			var req equeue.ResetRequest
			switch {
			case to != "" && len(offsets) > 0:
				return usageErrorf("give --to or --offset, not both")
			case to == "" && len(offsets) == 0:
				return usageErrorf("say where to move the group: --to earliest|latest|TIME or --offset TOPIC/QUEUE=N")
			case to == "earliest":
				req.To = equeue.ResetToEarliest
			case to == "latest":
				req.To = equeue.ResetToLatest
			case to != "":
				t, err := time.Parse(time.RFC3339Nano, to)
				if err != nil {
					return usageErrorf("--to %q: use earliest, latest or an RFC 3339 time such as 2026-01-02T15:04:05Z", to)
				}
				req.To, req.Time = equeue.ResetToTime, t
			default:
				req.To = equeue.ResetToOffsets
				req.Offsets = map[equeue.QueueRef]int64{}
				for _, s := range offsets {
					ref, off, err := parseQueueOffset(s)
					if err != nil {
						return usageErrorf("%v", err)
					}
					if _, dup := req.Offsets[ref]; dup {
						return usageErrorf("--offset: %s is given twice", ref)
					}
					req.Offsets[ref] = off
				}
			}
			group := argv[0]
			return a.withConn(readWrite, func(c *conn) error {
				if err := c.ResetOffsets(cmd.Context(), group, req); err != nil {
					if len(offsets) > 0 && refusedAsInvalid(err) {
						return fmt.Errorf("--offset: %w", err) // an offset outside its queue
					}
					return err
				}
				fmt.Fprintf(a.stdout, "reset offsets of group %s\n\n", group)
				g, err := c.Group(cmd.Context(), group)
				if err != nil {
					return err
				}
				return printGroup(a.stdout, g)
			})
		}),
	}
	cmd.Flags().StringVar(&to, "to", "", "earliest, latest or an RFC 3339 time")
	cmd.Flags().StringArrayVar(&offsets, "offset", nil, "set one queue's offset, `TOPIC/QUEUE=N` (repeatable)")
	return cmd
}
