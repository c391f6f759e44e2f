package watermill

import "github.com/ThreeDotsLabs/watermill/message"

// SetHandOutStall makes every hand-out call f after its first check of the
// subscription's stop, before it sends, until restore is called.
func SetHandOutStall(f func(*message.Message)) (restore func()) {
	handOutStall.Store(&f)
	return func() { handOutStall.Store(nil) }
}
