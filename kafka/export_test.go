package kafka

import (
	"time"

	"github.com/equeue-go/equeue"
)

// BrokerID is brokerID, for tests outside the package.
var BrokerID = brokerID

// SetEmptyGroupKeep sets how long empty groups (classic or KIP-848) are
// kept, until the test ends.
func SetEmptyGroupKeep(t interface{ Cleanup(func()) }, d time.Duration) {
	old := emptyGroupKeep
	emptyGroupKeep = d
	t.Cleanup(func() { emptyGroupKeep = old })
}

// SetMaxTimestampBudget sets the time one ListOffsets request spends
// reading partitions for MAX_TIMESTAMP, until the test ends: 0 makes one
// pull a partition.
func SetMaxTimestampBudget(t interface{ Cleanup(func()) }, d time.Duration) {
	old := maxTimestampBudget
	maxTimestampBudget = d
	t.Cleanup(func() { maxTimestampBudget = old })
}

// SetMaxTimestampSweep sets the number of topics kept at which a listener
// made after looks for deleted ones, until the test ends.
func SetMaxTimestampSweep(t interface{ Cleanup(func()) }, n int) {
	old := maxTimestampSweep
	maxTimestampSweep = n
	t.Cleanup(func() { maxTimestampSweep = old })
}

// MaxTimestampTopics counts the topics whose MAX_TIMESTAMP scans s keeps.
func MaxTimestampTopics(s *Server) int {
	s.maxTS.mu.Lock()
	defer s.maxTS.mu.Unlock()
	return len(s.maxTS.topics)
}

// CommitsAwaited returns a probe of the group named, of either protocol:
// it reports whether a change of who owns its partitions is waiting for
// commits in flight.
func CommitsAwaited(s *Server, group string) func() bool {
	c := s.groups
	return func() bool {
		c.lock()
		defer c.mu.Unlock()
		g := c.commits[group]
		return g != nil && g.awaited()
	}
}

// PendingMembers counts the member IDs the classic group named gave out
// with MEMBER_ID_REQUIRED that have not joined (nor expired) yet.
func PendingMembers(s *Server, group string) int {
	c := s.groups
	c.lock()
	defer c.mu.Unlock()
	if g := c.groups[group]; g != nil {
		return len(g.pending)
	}
	return 0
}

// Tick runs one round of s's coordinator as its ticker runs it at now:
// silent members expire, join phases end, empty groups are forgotten.
func Tick(s *Server, now time.Time) {
	s.groups.tick(now)
}

// ProducerStates counts the idempotent producers' sequence states s
// keeps of topic, one per producer and partition.
func ProducerStates(s *Server, topic string) int {
	s.pids.mu.Lock()
	defer s.pids.mu.Unlock()
	n := 0
	for k := range s.pids.parts {
		if k.topic == topic {
			n++
		}
	}
	return n
}

// APIRights is the rights any one of which each served API key needs (0:
// none, the calls that come before authentication), for tests outside the
// package.
func APIRights() map[int16]Rights {
	out := make(map[int16]Rights, len(supported))
	for k, v := range supported {
		out[k] = v.need
	}
	return out
}

// Closing is closed once s's Close has ended the calls of its
// connections (their context).
func Closing(s *Server) <-chan struct{} { return s.cancelled }

// SetAppendSettle sets how long an append in flight is still waited for
// once its connection ended, until the test ends.
func SetAppendSettle(t interface{ Cleanup(func()) }, d time.Duration) {
	old := appendSettle
	appendSettle = d
	t.Cleanup(func() { appendSettle = old })
}

// ProducerRecordID is the message ID the listener, under the key built
// in, gives record seq of an idempotent producer's epoch on a partition
// of topic: for tests that store such records as a listener before a
// restart did.
func ProducerRecordID(topic string, pid int64, epoch int16, part, seq int32) string {
	b := &producedBatch{producerID: pid, producerEpoch: epoch, firstSeq: seq, msgs: []*equeue.Message{{}}}
	newRecordMarks(nil).setIDs(b, topic, part)
	return b.msgs[0].ID
}
