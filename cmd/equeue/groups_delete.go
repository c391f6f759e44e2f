package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

func (a *app) groupsDeleteCommand() *cobra.Command {
	var force, yes bool
	cmd := &cobra.Command{
		Use:   "delete GROUP",
		Short: "Delete a consumer group, its offsets, retries and dead letters",
		Long: `groups delete removes a consumer group and everything stored for it: its
committed offsets, pending retries, its %RETRY% and %DLQ% topics with their
messages. It is refused while the group has live members; --force deletes
it anyway (the members are fenced; a consumer still running joins again as
a new group). On a terminal it asks for confirmation; otherwise (a script, a pipe) it
needs --yes.`,
		Example: `  equeue --dir ./data groups delete billing --yes
  equeue --server 127.0.0.1:7654 groups delete old-audit --force --yes`,
		Args: argCount(1, 1, "GROUP"),
		RunE: runE(func(cmd *cobra.Command, argv []string) error {
			name := argv[0]
			if err := equeue.ValidateName(name); err != nil {
				return usageErrorf("%v", err)
			}
			if !yes {
				// Only a terminal has someone to answer: a script's open
				// stdin would block the command, and a line piped in
				// (yes | equeue ...) is no one's decision.
				if !a.stdinIsTerminal() {
					return usageErrorf("groups delete removes group %s with its offsets, retries and dead letters: confirm with --yes (standard input is not a terminal, so it cannot ask)", name)
				}
				ok, err := a.confirm(fmt.Sprintf("delete group %s with its offsets, retries and dead letters? [y/N] ", name))
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("not deleted (give --yes to skip the question)")
				}
			}
			return a.withConn(readWrite, func(c *conn) error {
				d, ok := c.broker.(remote.GroupDeleter)
				if !ok {
					return errors.New("this broker cannot delete groups")
				}
				err := d.DeleteGroup(cmd.Context(), name, equeue.DeleteGroupOptions{Force: force})
				if errors.Is(err, equeue.ErrGroupHasMembers) {
					return fmt.Errorf("%w: stop its consumers first, or give --force", err)
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "deleted group %s\n", name)
				return nil
			})
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "delete even while the group has live members")
	cmd.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation")
	return cmd
}
