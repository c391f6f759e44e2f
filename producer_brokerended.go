package equeue

import "fmt"

// brokerCallEnded is the error of a SendAsync of m whose broker call
// (Route or Append), made on a goroutine of the producer's, never
// returned: the broker called runtime.Goexit (as testing's t.FailNow
// does), which recover cannot stop. The future fails with it, so that no
// one waits for it for ever, and the engine behind the broker, if any,
// logs it. The broker may have stored the message before it left, so the
// outcome is unknown (ErrIndeterminate). A broker that panics there ends
// the program, as a panic on any goroutine does: the future is completed
// on the way, but the panic is not recovered.
func (p *Producer) brokerCallEnded(m *Message) error {
	err := fmt.Errorf("%w: the broker's call for a SendAsync to topic %q did not return (runtime.Goexit)", ErrIndeterminate, m.Topic)
	if e := trackerOf(p.b); e != nil {
		e.log.Error("broker called runtime.Goexit in a SendAsync: the producer's goroutine that called it has ended", "topic", m.Topic)
	}
	return err
}
