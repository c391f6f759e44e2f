package remote

import (
	"errors"
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// answerSlack is what a pull answer may need beyond its messages' stored
// bytes (IDs, offsets, times and framing of up to a full batch). A first
// message past the room it leaves is pulled alone (pastSlack).
const answerSlack = 64 << 10

// recordRoom is the room an answer of at most limit bytes leaves for its
// messages' stored bytes: limit less answerSlack, or less half of it for a
// limit under twice the slack, so that a client with a small limit still
// gets batches (the answer's sizing leaves out the trailing messages its
// framing then has no room for).
func recordRoom(limit int) int {
	return max(limit-min(answerSlack, limit/2), 1)
}

// tooLargeFor returns err naming limit as what the receiver accepts when
// err refuses a message as too large for a smaller bound: the room the
// server read within, not the most a message may take in an answer of its
// own, which is what the caller can act on.
func tooLargeFor(err error, limit int) error {
	var tl *equeue.MessageTooLargeError
	if !errors.As(err, &tl) || tl.Limit >= limit {
		return err
	}
	named := *tl
	named.Limit = limit
	return &named
}

// pastSlack reports whether err refuses a pull's first message as too
// large for the room the pull left for records (the answer's limit less
// answerSlack, room for the framing of a full batch), though not for
// alone, the most the message may take in an answer of its own. Such a
// message is pulled again alone, within alone: the answer's sizing
// (planStored, sizedPullAnswer) then refuses it only if its answer cannot
// fit the limit, whatever its ID, keys and tag.
func pastSlack(err error, alone int) bool {
	var tl *equeue.MessageTooLargeError
	return errors.As(err, &tl) && tl.Limit < alone && tl.Size <= alone
}

// answerLimit is the most bytes a pull answer may take: the client's
// receive limit when it sent one, else the server's own message limit.
func (s *Server) answerLimit(client int) int {
	if client > 0 {
		return client
	}
	return s.maxMessageBytes
}

// pullAnswer encodes res, leaving out trailing messages (for the next pull)
// while the answer would pass limit bytes, so the client can always receive
// it. A single message that does not fit is ErrMessageTooLarge.
// With stored set (the records of res's messages, for a client that reads
// them), the answer carries them as a stored batch (storedanswer.go).
func pullAnswer(res equeue.PullResult, limit int, stored *equeue.StoredRecords) (*pb.PullResponse, error) {
	out, _, err := sizedPullAnswer(res, limit, stored)
	return out, err
}

// sizedPullAnswer is pullAnswer that also returns the answer's encoded
// size. The size is computed once; trimming subtracts each message left out.
func sizedPullAnswer(res equeue.PullResult, limit int, stored *equeue.StoredRecords) (*pb.PullResponse, int, error) {
	if p, ok, err := planStored(&res, stored, limit); err != nil {
		return nil, 0, err
	} else if ok {
		return storedAnswerPB(&res, stored, p), p.total, nil
	}
	out := &pb.PullResponse{Status: pb.PullStatus(res.Status), NextOffset: res.NextOffset, MinOffset: res.MinOffset,
		MaxOffset: res.MaxOffset, Corrupt: res.Corrupt, Expired: toInt32(res.Expired), Priority: toInt32(res.Priority),
		DeletedTopicRetries: toInt32(res.DeletedTopicRetries)}
	msgs, err := messagesToPB(res.Messages, answerTimes)
	if err != nil {
		return nil, 0, err
	}
	out.Messages = msgs
	if bound := answerBound(out); bound <= limit {
		// Surely within the limit: no need to size it here (gRPC sizes it
		// again to marshal it); the bound stands in for the size.
		return out, bound, nil
	}
	size := proto.Size(out)
	// An answer without messages has nothing to leave out: it goes as it
	// is, however small the client's limit.
	for size > limit && len(out.Messages) > 0 {
		n := len(out.Messages)
		if n == 1 {
			m := res.Messages[0]
			return nil, 0, &equeue.MessageTooLargeError{QueueRef: equeue.QueueRef{Topic: m.Topic, Queue: m.Queue}, Offset: m.Offset, Limit: limit}
		}
		last := out.Messages[n-1]
		out.Messages = out.Messages[:n-1]
		next := res.Messages[n-1].Offset
		// Less the message's field (tag, length, bytes); the next offset's
		// field may grow, by at most a tag and a full varint: size stays an
		// upper bound of the encoded size.
		size -= 1 + protowire.SizeBytes(proto.Size(last))
		size += 1 + protowire.SizeVarint(uint64(next))
		out.NextOffset = next
	}
	return out, size, nil
}

// spread shortens a long-poll's wait by up to a quarter at random, so the
// pulls of consumers started together do not all expire, and come back,
// at the same moment (a pull may always end early with no new message).
// Waits under a second are kept as asked.
func spread(wait time.Duration) time.Duration {
	if wait < time.Second {
		return wait
	}
	return wait - time.Duration(rand.Int64N(int64(wait/4)))
}

// answerBound is an upper bound of out's encoded size, from its lengths:
// every field at its widest tag and varints, and each message's framing.
func answerBound(out *pb.PullResponse) int {
	const (
		answerFixed  = 83  // status, offsets, expired, priority, deleted-topic retries (11 each); corrupt's tag and length
		messageFixed = 192 // framing, 3 strings, body, 7 integers, 2 durations
		keyFixed     = 6   // tag and length of a key
		entryFixed   = 20  // a map entry's tag, length and its two fields
	)
	n := answerFixed + 11*len(out.GetCorrupt())
	for _, m := range out.GetMessages() {
		n += messageFixed + len(m.GetId()) + len(m.GetTopic()) + len(m.GetTag()) + len(m.GetBody())
		for _, k := range m.GetKeys() {
			n += keyFixed + len(k)
		}
		for k, v := range m.GetProperties() {
			n += entryFixed + len(k) + len(v)
		}
		for k, v := range m.GetSysProperties() {
			n += entryFixed + len(k) + len(v)
		}
	}
	return n
}
