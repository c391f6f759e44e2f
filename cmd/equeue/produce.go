package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/equeue-go/equeue"
)

// maxLine is the longest line read as one message (the engine's default
// message limit is 4 MiB encoded).
const maxLine = 8 << 20

// pipelineDepth is how many sends are in flight at once on an in-process
// engine, so that lines read from a file share fsyncs.
const pipelineDepth = 256

// outcomeGrace bounds the wait for the outcomes of the sends in flight
// once a produce on a directory is stopped (outcomeWait).
const outcomeGrace = 10 * time.Second

func (a *app) produceCommand() *cobra.Command {
	var (
		keys, props    []string
		tag, file, id  string
		bodyFile       string
		delay, timeout time.Duration
		asJSON         bool
		priority       int
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC [MESSAGE...]",
		Short: "Send messages to a topic",
		Long: `produce sends each MESSAGE argument as one message. With no MESSAGE (or a
single "-") it sends one message per line of standard input; with --file,
one message per line of that file. Empty lines are skipped. --body-file
sends a whole file, binary-safe, as one message.

Every message gets the same --key, --tag, --property, --delay and
--priority (on a topic created with --priorities, the lane it is stored in:
consumers get higher priorities first). The first
--key routes the message: messages with the same key go to the same queue,
in order. For each message it prints the queue, offset and ID it was stored
with (a delayed message gets its offset when it becomes visible).`,
		Example: `  equeue --dir ./data produce orders "first order" "second order"
  echo '{"id":42}' | equeue --dir ./data produce orders --key customer-42 --tag created
  equeue --dir ./data produce orders --file orders.txt --property source=import --json
  equeue --dir ./data produce reminders "wake up" --delay 10m
  equeue --dir ./data produce jobs "urgent job" --priority 2`,
		Args: argCount(1, -1, "TOPIC [MESSAGE...]"),
		RunE: runE(func(cmd *cobra.Command, argv []string) error {
			topic, bodies := argv[0], argv[1:]
			fromStdin := len(bodies) == 0 || (len(bodies) == 1 && bodies[0] == "-")
			if file != "" && len(bodies) > 0 {
				return usageErrorf("give messages as arguments or with --file, not both")
			}
			if bodyFile != "" && (file != "" || len(bodies) > 0) {
				return usageErrorf("--body-file is the one message: give no MESSAGE and no --file")
			}
			if id != "" && bodyFile == "" && (file != "" || fromStdin || len(bodies) != 1) {
				return usageErrorf("--id names one message: give exactly one MESSAGE argument")
			}
			if len(id) > equeue.MaxIDBytes {
				return usageErrorf("--id: %d bytes, a message ID has at most %d", len(id), equeue.MaxIDBytes)
			}
			if delay < 0 {
				return usageErrorf("--delay must not be negative")
			}
			if priority < 0 {
				return usageErrorf("--priority must not be negative (0 is the lowest)")
			}
			properties := map[string]string{}
			for _, p := range props {
				k, v, err := parseProperty(p)
				if err != nil {
					return usageErrorf("%v", err)
				}
				properties[k] = v
			}
			if len(properties) == 0 {
				properties = nil
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			var src lineSource
			switch {
			case bodyFile != "":
				body, err := readBodyFile(bodyFile, a.stdin)
				if err != nil {
					return err
				}
				src = &argLines{bodies: []string{body}}
			case file != "" && file != "-":
				f, err := os.Open(file)
				if err != nil {
					return fmt.Errorf("--file: %w", err)
				}
				defer f.Close()
				src = interruptible(ctx, newLines(f))
			case file == "-" || fromStdin:
				src = interruptible(ctx, newLines(a.stdin))
			default:
				src = &argLines{bodies: bodies}
			}
			newMsg := func(body string) *equeue.Message {
				return &equeue.Message{ID: id, Topic: topic, Tag: tag, Keys: keys, Properties: properties, Body: []byte(body), Delay: delay, Priority: priority}
			}
			return a.withConn(readWrite, func(c *conn) error {
				// The broker itself, not the conn wrapper: an in-process engine
				// appends asynchronously in call order only when seen as one.
				p, err := equeue.NewProducer(c.broker, nil)
				if err != nil {
					return err
				}
				defer p.Close()
				print := func(r equeue.SendResult) error {
					if asJSON {
						return writeJSON(a.stdout, sendJSON{Topic: r.Topic, Queue: r.Queue, Offset: r.Offset, ID: r.ID, StoredAt: r.StoredAt, Delayed: r.Delayed, Duplicate: r.Duplicate})
					}
					line := fmt.Sprintf("queue=%d offset=%d id=%s", r.Queue, r.Offset, r.ID)
					if r.Delayed {
						line = fmt.Sprintf("queue=%d offset=pending id=%s delayed=%s", r.Queue, r.ID, delay)
					}
					if r.Duplicate {
						line += " duplicate"
					}
					_, err := fmt.Fprintln(a.stdout, line)
					return err
				}
				var n int
				if c.engine != nil {
					n, err = sendPipelined(ctx, p, src, newMsg, print)
				} else {
					n, err = sendInOrder(ctx, p, src, newMsg, print)
				}
				if errors.Is(err, equeue.ErrInvalidDelay) {
					return fmt.Errorf("--delay %s: %w", delay, err) // further out than the broker allows
				}
				if err != nil {
					return err
				}
				if n == 0 {
					// What the input holds is found while running, as a
					// line the broker refuses is: a failure, not a usage
					// error.
					return errors.New("no message to send: the input had no non-empty line")
				}
				a.log.Info("produced", "topic", topic, "messages", n)
				return nil
			})
		}),
	}
	f := cmd.Flags()
	f.StringArrayVar(&keys, "key", nil, "message `KEY`; the first one routes the message (repeatable)")
	f.StringVar(&tag, "tag", "", "message tag, for consumers' --filter")
	f.StringArrayVar(&props, "property", nil, "user property `KEY=VALUE` (repeatable)")
	f.DurationVar(&delay, "delay", 0, "deliver the messages after this delay (e.g. 30s, 10m)")
	f.IntVar(&priority, "priority", 0, "message priority on a topic with --priorities: 0 (lowest) to its lanes - 1; higher values count as the highest")
	f.StringVar(&file, "file", "", "read one message per line from this file (\"-\": standard input)")
	f.StringVar(&bodyFile, "body-file", "", "send this whole file, byte for byte, as one message (\"-\": standard input)")
	f.StringVar(&id, "id", "", "message ID (for deduplicating topics); default: a generated one")
	f.BoolVar(&asJSON, "json", false, "print one JSON object per message")
	f.DurationVar(&timeout, "timeout", 0, "give up after this long (0: no limit)")
	return cmd
}

// sendJSON is the JSON form of a send result.
type sendJSON struct {
	Topic     string    `json:"topic"`
	Queue     int       `json:"queue"`
	Offset    int64     `json:"offset"`
	ID        string    `json:"id"`
	StoredAt  time.Time `json:"stored_at"`
	Delayed   bool      `json:"delayed,omitempty"`
	Duplicate bool      `json:"duplicate,omitempty"`
}

// lineSource yields message bodies.
type lineSource interface {
	// next returns the next body, or io.EOF.
	next() (inputLine, error)
}

// inputLine is one message body and where the input has it.
type inputLine struct {
	body string
	unit string // "line" of a file or standard input, or "message" of the arguments
	no   int    // its number among them, from 1
}

type argLines struct {
	bodies []string
	i      int
}

func (s *argLines) next() (inputLine, error) {
	if s.i >= len(s.bodies) {
		return inputLine{}, io.EOF
	}
	s.i++
	return inputLine{body: s.bodies[s.i-1], unit: "message", no: s.i}, nil
}

type scanLines struct {
	sc *bufio.Scanner
	no int // lines read, empty ones included
}

func newLines(r io.Reader) *scanLines {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	return &scanLines{sc: sc}
}

func (s *scanLines) next() (inputLine, error) {
	for s.sc.Scan() {
		s.no++
		line := strings.TrimSuffix(s.sc.Text(), "\r")
		if line != "" {
			return inputLine{body: line, unit: "line", no: s.no}, nil
		}
	}
	switch err := s.sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return inputLine{}, fmt.Errorf("read input: line %d is longer than %d bytes: %w", s.no+1, maxLine, err)
	case err != nil && s.no > 0:
		return inputLine{}, fmt.Errorf("read input after line %d: %w", s.no, err)
	case err != nil:
		return inputLine{}, fmt.Errorf("read input: %w", err)
	}
	return inputLine{}, io.EOF
}

// ctxLines is a lineSource whose waits for input end with its context:
// the source is read on a goroutine of its own, which a signal leaves
// behind, so that Ctrl-C or SIGTERM ends a produce waiting on a pipe or
// a terminal.
type ctxLines struct {
	ctx   context.Context
	lines chan lineOrErr
	end   error // once the source ended: its error, or io.EOF
}

type lineOrErr struct {
	line inputLine
	err  error
}

// interruptible starts reading src ahead, one line at a time.
func interruptible(ctx context.Context, src lineSource) *ctxLines {
	s := &ctxLines{ctx: ctx, lines: make(chan lineOrErr)}
	go func() {
		for {
			line, err := src.next()
			select {
			case s.lines <- lineOrErr{line, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

func (s *ctxLines) next() (inputLine, error) {
	if s.end != nil {
		return inputLine{}, s.end
	}
	select {
	case l := <-s.lines:
		if l.err != nil {
			s.end = l.err
		}
		return l.line, l.err
	case <-s.ctx.Done():
		s.end = inputStopped(s.ctx)
		return inputLine{}, s.end
	}
}

// inputStopped says why a wait for input ended with ctx.
func inputStopped(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("--timeout passed while waiting for input: %w", ctx.Err())
	}
	return fmt.Errorf("interrupted while waiting for input: %w", ctx.Err())
}

// sendInOrder sends one message at a time, so messages of a key keep their
// order over the network.
func sendInOrder(ctx context.Context, p *equeue.Producer, src lineSource, newMsg func(string) *equeue.Message, print func(equeue.SendResult) error) (int, error) {
	n := 0
	for {
		line, err := src.next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		res, err := p.Send(ctx, newMsg(line.body))
		if err != nil {
			return n, &sendFailure{line: line, err: err, before: n}
		}
		n++
		if err := print(res); err != nil {
			return n, err
		}
	}
}

// sendPipelined keeps up to pipelineDepth sends in flight on an in-process
// engine (which stores them in call order, so per-key order holds) and
// prints each result, in input order, as soon as it is known. After a
// failed send it sends no further line, prints the sends already in flight
// that were stored, and returns the first failure.
func sendPipelined(ctx context.Context, p *equeue.Producer, src lineSource, newMsg func(string) *equeue.Message, print func(equeue.SendResult) error) (int, error) {
	pl := &pipeline{futures: make(chan sentLine, pipelineDepth), slots: make(chan struct{}, pipelineDepth),
		stopped: make(chan struct{}), readErr: make(chan error, 1)}
	go pl.read(ctx, p, src, newMsg)
	wait, release := outcomeWait(ctx)
	defer release()
	n := 0
	for s := range pl.futures {
		res, err := sendOutcome(wait, s.f)
		<-pl.slots
		if err != nil {
			// The reader may be blocked on its input; leave it behind once
			// the sends it started are accounted for.
			pl.stop()
			fail := &sendFailure{line: s.line, err: err, before: n}
			fail.sentAfter, fail.storedAfter = pl.drain(wait, print)
			return n + fail.storedAfter, fail
		}
		n++
		if err := print(res); err != nil {
			pl.stop()
			return n, err
		}
	}
	return n, <-pl.readErr
}

// pipeline is the reading side of sendPipelined: it sends each line
// asynchronously and queues the futures, in input order.
type pipeline struct {
	futures chan sentLine
	slots   chan struct{} // one per future queued and not yet handled
	readErr chan error    // the input's error (nil at its end), once
	mu      sync.Mutex    // held while a send starts, so stop sees every one
	stopped chan struct{}
	done    bool // under mu: no send may start any more
}

// read sends the lines of src until its end, an error, a send refused at
// once, or stop.
func (pl *pipeline) read(ctx context.Context, p *equeue.Producer, src lineSource, newMsg func(string) *equeue.Message) {
	defer close(pl.futures)
	for {
		line, err := src.next()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			pl.readErr <- err
			return
		}
		select {
		case pl.slots <- struct{}{}:
		case <-pl.stopped:
			pl.readErr <- nil
			return
		}
		f := pl.start(ctx, p, line, newMsg(line.body))
		if f == nil || refusedAtOnce(f) {
			// A refused line ends the input, as it does over a server.
			pl.readErr <- nil
			return
		}
	}
}

// sentLine is a line sent and the future of its send.
type sentLine struct {
	f    *equeue.SendFuture
	line inputLine
}

// start sends m, the message of line, and queues its future, unless the
// pipeline was stopped (then it returns nil). The queue has room: read
// holds a slot for it.
func (pl *pipeline) start(ctx context.Context, p *equeue.Producer, line inputLine, m *equeue.Message) *equeue.SendFuture {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.done {
		return nil
	}
	f := p.SendAsync(ctx, m)
	pl.futures <- sentLine{f: f, line: line}
	return f
}

// stop ends the reading: once it returns, every send started is queued.
func (pl *pipeline) stop() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if !pl.done {
		pl.done = true
		close(pl.stopped)
	}
}

// drain waits for the sends queued after stop, prints those stored and
// returns how many there were and how many of them it printed.
func (pl *pipeline) drain(wait context.Context, print func(equeue.SendResult) error) (sent, printed int) {
	for {
		var s sentLine
		select {
		case s = <-pl.futures:
		default:
		}
		if s.f == nil {
			return sent, printed
		}
		sent++
		res, err := sendOutcome(wait, s.f)
		if err != nil {
			continue
		}
		if print(res) != nil {
			return sent, printed
		}
		printed++
	}
}

// sendOutcome is f's outcome, or an error matching equeue.ErrIndeterminate
// once wait ends (see outcomeWait) with the outcome still unknown.
func sendOutcome(wait context.Context, f *equeue.SendFuture) (equeue.SendResult, error) {
	select {
	case <-f.Done():
		return f.Result(context.Background())
	case <-wait.Done():
		return equeue.SendResult{}, fmt.Errorf("%w: no answer %v after the produce was stopped: %w", equeue.ErrIndeterminate, outcomeGrace, context.Cause(wait))
	}
}

// outcomeWait returns the context that bounds the waits for the outcomes
// of sends started under ctx: it ends outcomeGrace after ctx ends, with
// ctx's error as its cause. The engine writes every send it took whatever
// the context (one it refused, ctx having ended first, fails with ctx's
// error alone), so once ctx ends (a signal, --timeout) the outcomes are
// still waited for: taking ctx's end for a refusal would report as not
// stored sends that the engine then stores. One deadline serves every
// send in flight.
func outcomeWait(ctx context.Context) (context.Context, context.CancelFunc) {
	wait, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		time.AfterFunc(outcomeGrace, func() { cancel(ctx.Err()) })
	})
	return wait, func() {
		stop()
		cancel(context.Canceled)
	}
}

// refusedAtOnce reports whether f already failed: the broker refused the
// message before taking it (too large, a bad name, ...).
func refusedAtOnce(f *equeue.SendFuture) bool {
	select {
	case <-f.Done():
		_, err := f.Result(context.Background())
		return err != nil
	default:
		return false
	}
}
