package remote

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"google.golang.org/grpc/connectivity"

	"github.com/equeue-go/equeue"
)

// wrote ends the writing of sends, a batch, on ps; err is what SendMsg
// returned.
//
// gRPC either hands a message whole to the connection or refuses it: a
// stream whose call has ended (the connection broke, perhaps while the
// client was idle, before the reader has ended the stream) refuses it
// with io.EOF. Such a batch never left the client: it is queued again, in
// order, in front of what waits, for a new stream, instead of being
// reported unknown. Any other refusal (one of the client's own, as an
// encoding error) fails the batch with it: not stored.
//
// A batch written while the reader ended the stream (broke left it here)
// may have reached the broker: unknown.
func (p *appendPipe) wrote(ps *pipeStream, sends []*pipeSend, err error) {
	p.mu.Lock()
	first := ps.writing
	ps.writing = 0
	if err == nil && !ps.ended {
		p.mu.Unlock() // in flight: the reader completes it
		return
	}
	ps.broken = true
	var mine []*pipeSend // those of the batch still in flight on ps
	for i := range sends {
		seq := first + uint64(i)
		if s, ok := ps.inFlight[seq]; ok {
			delete(ps.inFlight, seq)
			mine = append(mine, s)
		}
	}
	var again, told, gone []*pipeSend
	if errors.Is(err, io.EOF) {
		for _, s := range mine {
			if s.reported {
				// Its context ended while it was written, and it was told
				// unknown: it is only ended.
				told = append(told, s)
				continue
			}
			s.state = sendQueued
			again = append(again, s)
		}
		p.queue = slices.Concat(again, p.queue)
	} else {
		gone = mine
	}
	endErr := ps.endErr
	p.mu.Unlock()
	for _, s := range told {
		p.finish(s, equeue.AppendResult{}, nil) // frees its slot
	}
	if len(gone) == 0 {
		return
	}
	ferr := endErr // written as the call ended: unknown
	if err != nil {
		ferr = fmt.Errorf("remote: append not sent: %w", p.c.fail(err))
	}
	for _, s := range gone {
		p.finish(s, equeue.AppendResult{}, ferr)
	}
}

// connLeft reports whether ps's connection may be gone: gRPC says so as
// soon as it sees the connection end (the server went away, perhaps while
// the client was idle), before it ends the calls on it, and when the
// server sends GOAWAY. The sender then writes nothing more on ps (it
// drains, its reader reading what is answered) and opens a new stream,
// which connects again: an append written on a connection already gone
// would be reported unknown although the broker never read it.
//
// The connection left when its departures (connWatch) moved since ps
// began to open, or another connection began since ps opened, whatever
// its state says now: another call may have connected again meanwhile
// (READY), and a stream that never saw the state ready could not tell
// that from the lag below.
//
// gRPC gives calls a new connection before its state says ready, so a
// stream can open, and be answered, while the state still says
// CONNECTING: that is no connection leaving, unless ps saw the state
// ready before (a reconnect under way). A connection that went shows as
// IDLE or TRANSIENT_FAILURE (or SHUTDOWN once the client closed), never
// as that lag's CONNECTING: those mean it left whether or not ps saw it
// ready, even before the count shows it. p.mu is held.
func (p *appendPipe) connLeft(ps *pipeStream) bool {
	if w := p.c.watch; w.departures() != ps.departures || w.began() != ps.began {
		return true
	}
	switch p.connState() {
	case connectivity.Ready:
		ps.sawReady = true
		return false
	case connectivity.Connecting:
		return ps.sawReady
	default:
		return true
	}
}

// seeReady notes it in ps when the connection's state is ready, and
// reports whether it is. p.mu is held.
func (p *appendPipe) seeReady(ps *pipeStream) bool {
	if p.connState() != connectivity.Ready {
		return false
	}
	ps.sawReady = true
	return true
}
