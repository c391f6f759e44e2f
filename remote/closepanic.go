package remote

import (
	"log/slog"
	"runtime/debug"
)

// closePanics follows, on one Close's goroutine, the panics of the
// callbacks that Close runs: once one panicked, the Close goes on with
// its work while that panic unwinds it (forEach, deferred steps), and a
// later panic would take the first's place and drop it without a word.
type closePanics struct {
	log *slog.Logger
	// unwinding is set once a callback's panic (or Goexit) began to
	// unwind the Close.
	unwinding bool
}

func newClosePanics(log *slog.Logger) *closePanics {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &closePanics{log: log}
}

// forEach runs f on each of xs, in order. A call of f that panics (a
// callback's panic, on a Close's goroutine), or ends its goroutine, does
// not keep f from running on the rest: it does, then the panic goes on to
// the caller, with its own stack. A Close thus finishes its work, every
// append reported and the connection closed, before a callback's panic
// reaches its caller. The first panic is the one that goes on: a call of
// f that panics while an earlier panic unwinds (here or in another
// forEach of the same cp) is recovered and logged with its stack.
func forEach[T any](cp *closePanics, xs []T, f func(T)) {
	i := 0
	defer func() {
		if i < len(xs) { // f(xs[i]) did not return
			cp.unwinding = true
			forEach(cp, xs[i+1:], f)
		}
	}()
	for ; i < len(xs); i++ {
		if cp.unwinding {
			cp.run(func() { f(xs[i]) })
		} else {
			f(xs[i])
		}
	}
}

// run runs f while an earlier panic unwinds: a panic of f is logged, not
// raised (it would drop the earlier one).
func (cp *closePanics) run(f func()) {
	defer func() {
		if p := recover(); p != nil {
			cp.log.Error("panic in a callback run by Close while an earlier callback's panic unwinds it",
				"panic", p, "stack", string(debug.Stack()))
		}
	}()
	f()
}
