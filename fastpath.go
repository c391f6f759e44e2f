package equeue

// A broker's fast paths are methods that stand in for its Broker methods
// when a caller finds them: AppendAsync for Append (Producer.SendAsync,
// and package remote's append stream), PullStored for Pull (package
// remote's pulls). Found by a type assertion, they are promoted like any
// other method: a type that embeds an *Engine and overrides Append or Pull
// (to check a right, count, or refuse) would get the engine's AppendAsync
// or PullStored too, and a caller taking the fast path would bypass its
// override without a word. So a fast path is taken only on a broker that
// owns it: one whose FastPathOwner returns the broker itself. A wrapper
// inherits FastPathOwner as well, but it returns the embedded broker, not
// the wrapper, so callers fall back to the wrapper's own Append and Pull.

// FastPathOwner is implemented by brokers whose fast paths (AppendAsync,
// PullStored) stand in for their Append and Pull. It returns the broker
// itself; a type that embeds one gets the embedded broker's answer, which
// tells callers to use the type's own Append and Pull instead. A broker of
// your own with an AppendAsync or PullStored that does what its Append or
// Pull does implements FastPathOwner returning itself, and so may a
// wrapper that changes neither Append nor Pull, to keep the fast paths.
type FastPathOwner interface {
	// FastPathOwner returns the broker whose fast paths these are.
	FastPathOwner() any
}

// OwnsFastPaths reports whether b's fast paths may stand in for its
// Append and Pull: b implements FastPathOwner and it returns b.
func OwnsFastPaths(b any) bool {
	o, ok := b.(FastPathOwner)
	// Interfaces of different dynamic types compare unequal without
	// looking at the values, so an incomparable wrapper does not panic.
	return ok && o.FastPathOwner() == b
}

// FastPathOwner returns e: its AppendAsync and PullStored stand in for its
// Append and Pull (see OwnsFastPaths).
//
// Broker seam: producers and transports ask it; applications need not.
func (e *Engine) FastPathOwner() any { return e }

// FastPathOwner returns n: its AppendAsync stands in for its Append (see
// OwnsFastPaths).
func (n *Namespace) FastPathOwner() any { return n }
