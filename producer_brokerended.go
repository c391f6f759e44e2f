package equeue

import "fmt"

// brokerCallEnded is the error of a SendAsync of m whose call to the
// broker (Route, Append, AppendAsync) or to the selector never returned:
// it called runtime.Goexit (as testing's t.FailNow does), which recover
// cannot stop. The future fails with it, matching ErrGoexit, so that no
// one waits for it for ever, and the engine behind the broker, if any,
// logs it. When the call was the broker's Append or AppendAsync
// (appending), the broker may have stored the message before it left, so
// the outcome is unknown (ErrIndeterminate too); before it, nothing was
// stored. A broker that panics there ends the program when on a
// goroutine of the producer's, as a panic on any goroutine does: the
// future is completed on the way, but the panic is not recovered.
func (p *Producer) brokerCallEnded(m *Message, appending bool) error {
	var err error
	if appending {
		err = fmt.Errorf("%w: %w: the broker's append for a SendAsync to topic %q did not return", ErrIndeterminate, ErrGoexit, m.Topic)
	} else {
		err = fmt.Errorf("%w: picking the queue for a SendAsync to topic %q (the broker's Route or the selector): nothing was stored", ErrGoexit, m.Topic)
	}
	if e := trackerOf(p.b); e != nil {
		e.log.Error("a call for a SendAsync called runtime.Goexit: the goroutine that made it has ended", "topic", m.Topic, "appending", appending)
	}
	return err
}
