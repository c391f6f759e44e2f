package watermill

import (
	"sync/atomic"

	"github.com/ThreeDotsLabs/watermill/message"
)

// handOutStall, when set (by tests only), is called by a hand-out between
// its first check of the subscription's stop and its send: it stands for
// a handler goroutine the scheduler leaves there for any time.
var handOutStall atomic.Pointer[func(*message.Message)]

// stallHandOut calls handOutStall, if set, with msg.
func stallHandOut(msg *message.Message) {
	if f := handOutStall.Load(); f != nil {
		(*f)(msg)
	}
}
