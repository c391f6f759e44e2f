package equeue

import "fmt"

// MessageTooLargeError is returned by a pull over a transport whose receive
// limit is below the size of one stored message (package remote, when the
// client's MaxMessageBytes is smaller than the server's): that client can
// never receive the message, so its queue cannot move past it. It matches
// ErrMessageTooLarge with errors.Is; use errors.As to read where it is.
//
// A Consumer that meets one moves the message to its group's dead letters
// by reference (the engine reads it; the body never travels), with this
// error as the cause, and goes on with the next message; from there a
// client with a larger limit can read or redrive it. A PullConsumer
// returns it.
type MessageTooLargeError struct {
	QueueRef
	// Offset is the message's offset in its queue.
	Offset int64
	// Size is the message's size in bytes as stored (0 when not known).
	Size int
	// Limit is the receiver's limit in bytes.
	Limit int
}

// Error describes the message and the limit it passed.
func (e *MessageTooLargeError) Error() string {
	if e.Size > 0 {
		return fmt.Sprintf("%v: %s offset %d is %d bytes stored; the receiver accepts at most %d",
			ErrMessageTooLarge, e.QueueRef, e.Offset, e.Size, e.Limit)
	}
	return fmt.Sprintf("%v: %s offset %d does not fit the receiver's %d-byte answer limit",
		ErrMessageTooLarge, e.QueueRef, e.Offset, e.Limit)
}

// Is reports whether target is ErrMessageTooLarge.
func (e *MessageTooLargeError) Is(target error) bool { return target == ErrMessageTooLarge }
