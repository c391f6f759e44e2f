package equeue

import (
	"fmt"
	"time"
)

// validateMessage checks the fields of message i of an append that the
// record format limits, after Delay and TTL were applied, and returns the
// message to store: m itself, or a copy whose ExpiresAt beyond what a record
// can hold (after 2262) is cleared, since such a time means "never expires".
//
// Errors wrap ErrInvalidArgument: an ID longer than MaxIDBytes (unless the
// message is a stored one sent again: storedAgain); Attempt
// outside 0..1<<30-1; BornAt,
// DeliverAt or ExpiresAt before 1678, BornAt or DeliverAt after 2262
// (DeliverAt then also matches ErrInvalidDelay), or any of them exactly at
// the Unix epoch. The BornAt the engine fills in when it is zero is always valid.
func validateMessage(i int, m *Message, storedAgain bool) (*Message, error) {
	if m.Attempt == 0 && m.BornAt.IsZero() && m.DeliverAt.IsZero() && m.ExpiresAt.IsZero() &&
		(len(m.ID) <= MaxIDBytes || storedAgain) {
		return m, nil // most sends: no time and no attempt to check
	}
	return checkMessageFields(i, m, storedAgain)
}

// checkMessageFields is validateMessage for any message: each of its
// checks runs. validateMessage skips it only for a message none of them
// can refuse (TestValidateMessage_PlainAsChecked).
func checkMessageFields(i int, m *Message, storedAgain bool) (*Message, error) {
	if m.ExpiresAt.After(maxRecordTime) {
		cp := *m
		cp.ExpiresAt = time.Time{}
		m = &cp
	}
	if m.DeliverAt.After(maxRecordTime) {
		return nil, fmt.Errorf("%w: %w: message %d: deliver-at %v is after %v", ErrInvalidDelay, ErrInvalidArgument, i, m.DeliverAt.UTC(), maxRecordTime.UTC())
	}
	if len(m.ID) > MaxIDBytes && !storedAgain {
		return nil, fmt.Errorf("%w: message %d: ID of %d bytes, at most %d", ErrInvalidArgument, i, len(m.ID), MaxIDBytes)
	}
	if err := checkRecord(m, m.BornAt); err != nil {
		return nil, fmt.Errorf("message %d: %w", i, err)
	}
	return m, nil
}

// MaxIDBytes bounds a producer-supplied message ID: it is stored with
// every record, and on a topic with a dedup window also in its group of
// dedup entries and in memory for the window's length.
const MaxIDBytes = 4096
