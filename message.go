package equeue

import (
	"crypto/rand"
	"encoding/binary"
	"sync/atomic"
	"time"
)

// Message is one message: what a producer sends and what a consumer receives.
//
// On Send, Topic and Body are what matter; Tag, Keys, Properties, ID, TTL and
// DeliverAt are optional. The engine fills Queue, Offset, StoredAt (and ID
// and BornAt when empty). A received message carries every field as sent,
// but for Delay and TTL, which are not stored (they set DeliverAt and
// ExpiresAt), and Priority, which is the lane it was stored in.
type Message struct {
	// ID identifies the message. Empty on Send means the engine generates a
	// unique one (24 lowercase hex digits); a producer-supplied ID is kept
	// as is.
	ID string
	// Topic the message belongs to.
	Topic string
	// Tag is one optional label that subscriptions filter on ("*" or "A || B").
	Tag string
	// Keys are lookup keys. The first key, when present, routes the message:
	// messages with the same first key go to the same queue, in send order.
	Keys []string
	// Properties are user key/value pairs, carried unchanged.
	Properties map[string]string
	// Body is the payload.
	Body []byte
	// BornAt is when the producer created the message (set on Send if zero).
	// A time set on Send must lie in 1678..2262 (what int64 unix nanoseconds
	// hold) and not be the Unix epoch itself, else Send returns
	// ErrInvalidArgument.
	BornAt time.Time
	// StoredAt is when the engine wrote the message (set by the engine).
	// For a message sent without BornAt and not delayed, the record keeps
	// it as a delta from BornAt: exact to the nanosecond when the write
	// came within 1.07 s of Send (the normal case), else rounded down to
	// the microsecond (within 17.9 minutes) or the millisecond.
	StoredAt time.Time
	// Queue is the queue the message is stored in (set by the engine).
	Queue int
	// Offset is the message's position in its queue (set by the engine).
	Offset int64
	// DeliverAt, when in the future on Send, delays the message until then:
	// it is stored at once and becomes visible in its queue at that time.
	// A time after Options.MaxDelay from now returns ErrInvalidDelay; one
	// outside 1678..2262 or at the Unix epoch returns ErrInvalidArgument.
	// A batch is delivered in its order: one whose messages' delivery
	// times go back returns ErrInvalidDelay.
	DeliverAt time.Time
	// Delay, when positive on Send, sets DeliverAt to the send time plus Delay.
	// It is not stored.
	Delay time.Duration
	// TTL, when positive on Send, sets ExpiresAt to the send time plus TTL.
	// It is not stored. A send whose expiry is not after its delivery
	// (DeliverAt or Delay) would never be delivered: it returns
	// ErrInvalidDelay.
	TTL time.Duration
	// ExpiresAt, when set, is the end of the message's life: consumers never
	// receive it after that moment. Producers usually set it through TTL.
	// A time after 2262 (beyond int64 unix nanoseconds, a common way to say
	// "never") means no expiry: the message is stored, and received, with a
	// zero ExpiresAt. One before 1678 or at the Unix epoch returns
	// ErrInvalidArgument.
	ExpiresAt time.Time
	// Attempt counts earlier failed deliveries of this message (0 on the
	// first). On Send it must be in 0..1<<30-1, else ErrInvalidArgument.
	Attempt int
	// Priority chooses the lane of a topic created with
	// TopicOptions.Priorities: 0 (the default) is the lowest lane,
	// Priorities-1 the highest; a value below or above is taken as the
	// lowest or highest. Topics without priorities ignore it. It is not
	// stored with the message: a received message carries the lane it was
	// stored in (a Consumer's and a PullConsumer's, and Engine.Pull's,
	// in-process and over remote, where the pull answer carries it; a
	// broker from before pull answers carried it gives 0). A batch goes to
	// the lane of its first message.
	Priority int

	// sys holds engine-owned properties (retry origin, last error).
	sys map[string]string
	// pulled is the message as pulled from the retry topic when this is
	// its origin view: what a send-back names (sendback.go).
	pulled *Message
	// ns is the prefix ("tenant:") of the namespace whose view handed the
	// message out under its unqualified names, "" when the engine did.
	ns string
}

// EngineTopic returns the topic as the engine names it: Topic itself,
// except for a message received through a Namespace, whose Topic is the
// namespace's name ("orders") and whose engine name is qualified
// ("tenant:orders"). Metrics use it, so that the series a consumer's hooks
// record of a topic carry the name the engine's own series of it carry.
func (m *Message) EngineTopic() string {
	if m.ns == "" || m.Topic == "" {
		return m.Topic
	}
	return qualify(m.ns, m.Topic)
}

// routingKey is what key-hash selection uses.
func (m *Message) routingKey() string {
	if len(m.Keys) > 0 {
		return m.Keys[0]
	}
	return ""
}

// SysProperty returns an engine-owned property, such as the origin of a retried message.
func (m *Message) SysProperty(name string) string { return m.sys[name] }

// idSource makes message IDs: 24 lowercase hex digits of 4 random bytes
// fixed per process followed by a counter, so IDs are unique without a
// syscall per message. The counter is the unix-nanosecond time of the ID,
// moved on by one where two IDs would share it, so it never repeats within
// a process; the engine stamps the message's born-at with it, which lets the
// record format keep the counter in no space (codec.go).
type idSource struct {
	prefix [engineIDPrefixLen]byte
	last   atomic.Int64
}

func newIDSource() *idSource {
	s := &idSource{}
	_, _ = rand.Read(s.prefix[:])
	return s
}

// next returns a new ID and the time its counter stands for: now, or just
// after the previous ID's.
func (s *idSource) next(now time.Time) (string, time.Time) {
	raw, at := s.nextRaw(now)
	return formatEngineID(raw), at
}

// nextRaw is next with the ID as its 12 bytes, which the record format
// keeps as they are (codec.go).
func (s *idSource) nextRaw(now time.Time) (raw [engineIDLen / 2]byte, at time.Time) {
	n := now.UnixNano()
	for {
		last := s.last.Load()
		v := max(n, last+1)
		if s.last.CompareAndSwap(last, v) {
			copy(raw[:], s.prefix[:])
			binary.BigEndian.PutUint64(raw[engineIDPrefixLen:], uint64(v))
			return raw, time.Unix(0, v)
		}
	}
}
