package remote

import (
	"context"
	"encoding/binary"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// A client that reads the engine's stored batches says so in its pull
// (stored_batch_version); the broker then answers with the records it read,
// as they are stored, in the answer's stored field, instead of encoding
// every field of every message again, and the client decodes them as the
// engine does (equeue.DecodeStoredBatch). The answer is otherwise the same:
// status, offsets, corrupt offsets, expired count, and the same trimming to
// the client's limit. A pull whose messages are not the engine's records
// (a Namespace's, whose topics it renames) is answered with messages, and
// so is a client that reads no batches or only older ones than this
// build's.

// storedPuller is a backend that returns the records of its pulls'
// messages (equeue.Engine; a Namespace renames its topics, so it does not).
type storedPuller interface {
	PullStored(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, *equeue.StoredRecords, error)
}

// pullBackend pulls from b, with the messages' records when the client
// reads stored batches up to version and b has them.
func pullBackend(ctx context.Context, b Backend, req *equeue.PullRequest, version int32) (equeue.PullResult, *equeue.StoredRecords, error) {
	if sp, ok := b.(storedPuller); ok && version >= equeue.StoredBatchVersion && equeue.OwnsFastPaths(b) {
		return sp.PullStored(ctx, req)
	}
	res, err := b.Pull(ctx, req)
	return res, nil, err
}

// pullStored is the field number of PullResponse.stored (equeue.proto).
const pullStored = 8

// storedPlan is how a pull's answer carries its messages as a stored
// batch: the first n messages, in a batch of size bytes, next the answer's
// next offset and total its encoded size.
type storedPlan struct {
	n, size, total int
	next           int64
}

// planStored plans res's answer as a stored batch of the messages in
// stored, within limit bytes. ok is false when the answer is to carry
// res.Messages instead (stored is nil or holds none); a first message that
// does not fit is ErrMessageTooLarge, as with messages.
func planStored(res *equeue.PullResult, stored *equeue.StoredRecords, limit int) (p storedPlan, ok bool, err error) {
	if stored.Len() == 0 {
		return p, false, nil
	}
	// Room for the rest of the answer, its next offset at its widest, and
	// the stored field's tag and length.
	rest := answerSize(*res, 0, nil) + protowire.SizeTag(pullNextOffset) + binary.MaxVarintLen64 +
		protowire.SizeTag(pullStored) + protowire.SizeVarint(uint64(limit))
	size, n, ok := stored.BatchSize(limit - rest)
	if !ok {
		// The engine's records are always in offset order of one queue.
		return p, false, fmt.Errorf("remote: the stored records of %v cannot be sent", stored.QueueRef())
	}
	if n == 0 {
		return p, false, &equeue.MessageTooLargeError{QueueRef: stored.QueueRef(), Offset: stored.Offset(0), Limit: limit}
	}
	p = storedPlan{n: n, size: size, next: res.NextOffset}
	if n < stored.Len() {
		p.next = stored.Offset(n)
	}
	p.total = answerSize(*res, p.next, nil) + protowire.SizeTag(pullStored) + protowire.SizeBytes(size)
	return p, true, nil
}

// appendStoredAnswer appends res's answer as planned by planStored, in
// protobuf's field order (as proto.Marshal writes a PullResponse).
func appendStoredAnswer(b []byte, res *equeue.PullResult, stored *equeue.StoredRecords, p storedPlan) []byte {
	b = appendVarint(b, pullStatus, int64(int32(res.Status)))
	b = appendAnswerTail(b, *res, p.next)
	b = protowire.AppendTag(b, pullStored, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(p.size))
	b = stored.AppendBatch(b, p.n)
	b = appendVarint(b, pullPriority, int64(toInt32(res.Priority)))
	return appendVarint(b, pullDeletedRetries, int64(toInt32(res.DeletedTopicRetries)))
}

// storedAnswerPB is res's answer as planned by planStored, as a protobuf
// message.
func storedAnswerPB(res *equeue.PullResult, stored *equeue.StoredRecords, p storedPlan) *pb.PullResponse {
	return &pb.PullResponse{Status: pb.PullStatus(res.Status), NextOffset: p.next, MinOffset: res.MinOffset,
		MaxOffset: res.MaxOffset, Corrupt: res.Corrupt, Expired: toInt32(res.Expired),
		Stored: stored.AppendBatch(make([]byte, 0, p.size), p.n), Priority: toInt32(res.Priority),
		DeletedTopicRetries: toInt32(res.DeletedTopicRetries)}
}

// storedMessages decodes an answer's stored batch; an answer with both
// messages and a batch is refused.
func storedMessages(stored []byte, messages int) ([]*equeue.Message, error) {
	if messages > 0 {
		return nil, fmt.Errorf("%w: a pull answer with both messages and a stored batch", equeue.ErrCorrupt)
	}
	return equeue.DecodeStoredBatch(stored)
}
