// Command equeue runs and administers equeue engines: it serves an engine
// directory over the network (serve), and manages topics, produces and
// consumes messages, inspects consumer groups, resets offsets, redrives dead
// letters and measures throughput (bench), either on an engine directory it
// opens itself (--dir) or through a running broker (--server).
//
// Exit codes: 0 on success, 1 when the operation failed, 2 when the command
// line was wrong (unknown command or flag, missing or bad argument, or a
// value the broker refuses as invalid: see refusedAsInvalid).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	// A reader of standard output or error that goes away ("equeue ... |
	// head -1") must not kill the process with SIGPIPE while it holds an
	// engine directory open, which then needs recovery before a read-only
	// command opens it again: with SIGPIPE ignored the write fails (EPIPE),
	// and the command stops as after any failed write, closing what it
	// opened (consume commits what it wrote and leaves its group).
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := notifySignals()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := newApp(stdin, stdout, stderr)
	root := a.rootCommand()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ce *cliError
	if !errors.As(err, &ce) {
		// Errors that did not come out of a command's own code come from
		// cobra itself: unknown commands and flags, bad flag values, wrong
		// argument counts.
		ce = &cliError{code: exitUsage, err: err}
	}
	if refusedAsInvalid(ce.err) {
		ce.code = exitUsage
	}
	fmt.Fprintf(stderr, "equeue: %s%s\n", errorText(ce.err), hint(ce.err))
	if ce.code == exitUsage && cmd != nil {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return ce.code
}

// errorText is err's message without the "equeue: " prefixes of the engine
// errors it wraps, since the line already starts with one.
func errorText(err error) string {
	msg := strings.TrimPrefix(err.Error(), "equeue: ")
	return strings.ReplaceAll(msg, ": equeue: ", ": ")
}

// hint suggests the next step for common failures.
func hint(err error) string {
	switch {
	case errors.Is(err, equeue.ErrTopicNotFound):
		return "\n(list topics with \"equeue topic list\", create one with \"equeue topic create NAME\")"
	case errors.Is(err, equeue.ErrGroupNotFound):
		return "\n(list groups with \"equeue groups\")"
	case errors.Is(err, remote.ErrUnauthenticated):
		return "\n(give the server's token with --token or $" + envToken + ")"
	case errors.Is(err, remote.ErrMetadataTooLarge):
		return "\n(the call's metadata, its token included, is over the server's bound: give a shorter token, or raise the server's --max-metadata-bytes)"
	case errors.Is(err, remote.ErrUnavailable):
		return "\n(is \"equeue serve\" running there? check --server and the TLS flags)"
	}
	return ""
}
