package remote

import (
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// answerSlack is what a pull answer may need beyond its messages' stored
// bytes (IDs, offsets, times and framing of up to a full batch).
const answerSlack = 64 << 10

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
func pullAnswer(res equeue.PullResult, limit int) (*pb.PullResponse, error) {
	out := &pb.PullResponse{Status: pb.PullStatus(res.Status), NextOffset: res.NextOffset, MinOffset: res.MinOffset,
		MaxOffset: res.MaxOffset, Corrupt: res.Corrupt, Expired: toInt32(res.Expired)}
	msgs, err := messagesToPB(res.Messages)
	if err != nil {
		return nil, err
	}
	out.Messages = msgs
	for proto.Size(out) > limit {
		n := len(out.Messages)
		if n <= 1 {
			m := res.Messages[0]
			return nil, &equeue.MessageTooLargeError{QueueRef: equeue.QueueRef{Topic: m.Topic, Queue: m.Queue}, Offset: m.Offset, Limit: limit}
		}
		out.Messages = out.Messages[:n-1]
		out.NextOffset = res.Messages[n-1].Offset
	}
	return out, nil
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
