package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// storedPull pulls n messages of growing bodies from a new in-memory
// engine as a broker does, with their records, and returns them too as
// Engine.Pull decodes them (msgs).
func storedPull(t testing.TB, n int) (res equeue.PullResult, stored *equeue.StoredRecords, msgs []*equeue.Message) {
	t.Helper()
	ctx := context.Background()
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	var sent []*equeue.Message
	for i := range n {
		sent = append(sent, &equeue.Message{Topic: "t", Tag: "A", Body: bytes.Repeat([]byte{byte('a' + i%26)}, 100*(i+1))})
	}
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: sent})
	require.NoError(t, err)
	res, stored, err = e.PullStored(ctx, &equeue.PullRequest{Topic: "t", Max: n})
	require.NoError(t, err)
	require.Equal(t, n, stored.Len())
	decoded, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: n})
	require.NoError(t, err)
	require.Len(t, decoded.Messages, n)
	return res, stored, decoded.Messages
}

// The broker's stored answer is the bytes protobuf writes for the same
// answer, its planned size exact and within the limit; trimmed to a limit,
// it carries the first messages and the next offset is the first left
// out; both decoders read it back as the engine's messages; a first
// message over the limit is ErrMessageTooLarge.
func TestStoredAnswer_SameBytesAsProtobuf(t *testing.T) {
	res, stored, msgs := storedPull(t, 12)
	res.Corrupt, res.Expired, res.DeletedTopicRetries = []int64{1, 70000}, 3, 4 // as a pull that skipped records reports them
	res.Priority = 2                                                            // as a pull of lane 2 of a topic with priorities
	for _, m := range msgs {
		m.Priority = 2
	}
	whole, ok, err := planStored(&res, stored, 1<<20)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 12, whole.n)
	for _, limit := range []int{1 << 20, whole.total, whole.total - 1, whole.total / 2, 700, 300, 100} {
		p, ok, err := planStored(&res, stored, limit)
		if limit < 200 {
			var big *equeue.MessageTooLargeError
			require.True(t, errors.As(err, &big), "limit %d: %v", limit, err)
			assert.Equal(t, int64(0), big.Offset)
			_, _, err = sizedPullAnswer(res, limit, stored)
			require.ErrorAs(t, err, &big)
			continue
		}
		require.NoError(t, err, "limit %d", limit)
		require.True(t, ok)
		b := appendStoredAnswer(nil, &res, stored, p)
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(storedAnswerPB(&res, stored, p))
		require.NoError(t, err)
		require.Equal(t, want, b, "limit %d", limit)
		assert.Len(t, b, p.total, "limit %d", limit)
		assert.LessOrEqual(t, len(b), limit)
		out, size, err := sizedPullAnswer(res, limit, stored)
		require.NoError(t, err)
		assert.Equal(t, proto.Size(out), size)

		got, viaPB, gotErr, pbErr := decodeBoth(b)
		require.NoError(t, gotErr)
		require.NoError(t, pbErr)
		require.NoError(t, got.err)
		require.NoError(t, viaPB.err)
		assert.Equal(t, viaPB.res, got.res)
		assert.Equal(t, msgs[:p.n], got.res.Messages, "limit %d", limit)
		if p.n < len(msgs) {
			assert.Equal(t, msgs[p.n].Offset, got.res.NextOffset, "limit %d: the next pull starts at the first left out", limit)
		} else {
			assert.Equal(t, res.NextOffset, got.res.NextOffset)
		}
		assert.Equal(t, res.Corrupt, got.res.Corrupt)
		assert.Equal(t, res.Expired, got.res.Expired)
		assert.Equal(t, res.DeletedTopicRetries, got.res.DeletedTopicRetries)
		assert.Equal(t, res.Priority, got.res.Priority)
	}
	// No records (a backend without them, whose result holds the
	// messages): the answer carries messages.
	plain := res
	plain.Messages = msgs
	_, ok, err = planStored(&plain, nil, 1<<20)
	require.NoError(t, err)
	assert.False(t, ok)
	out, err := pullAnswer(plain, 1<<20, nil)
	require.NoError(t, err)
	assert.Len(t, out.GetMessages(), 12)
	assert.Empty(t, out.GetStored())
}

// storedAnswerSeeds are pull answers with stored batches: the usual one,
// which the direct decoder takes, and others (both messages and a batch, a
// damaged batch, an empty one, a batch twice), which it leaves to
// protobuf, whose decoding refuses or reads them alike.
func storedAnswerSeeds(t testing.TB) (usual, other [][]byte) {
	res, stored, _ := storedPull(t, 3)
	p, ok, err := planStored(&res, stored, 1<<20)
	require.NoError(t, err)
	require.True(t, ok)
	good := appendStoredAnswer(nil, &res, stored, p)
	batch := stored.AppendBatch(nil, p.n)
	enc := func(r *pb.PullResponse) []byte {
		b, err := proto.Marshal(r)
		require.NoError(t, err)
		return b
	}
	damaged := bytes.Clone(batch)
	damaged[len(damaged)-1] ^= 0xff // the last record's body
	usual = [][]byte{good}
	other = [][]byte{
		enc(&pb.PullResponse{Stored: batch, Messages: []*pb.Message{{Id: "x"}}}),
		enc(&pb.PullResponse{Stored: damaged}),
		enc(&pb.PullResponse{Stored: batch[:len(batch)-1]}),
		enc(&pb.PullResponse{Stored: []byte{equeue.StoredBatchVersion + 1}}),
		append(enc(&pb.PullResponse{Stored: damaged}), enc(&pb.PullResponse{Stored: batch})...), // the last wins
		fmt.Appendf(enc(&pb.PullResponse{Status: 1}), "%c%c", pullStored<<3|2, 0),               // an empty batch
	}
	return usual, other
}

func TestStoredAnswer_DecodersAgree(t *testing.T) {
	usual, other := storedAnswerSeeds(t)
	checkDecoders(t, usual, other)
	// Refused: both forms, a damaged record (its checksum), a cut batch, a
	// newer version. Read: the last of two batches, an empty one.
	for i, refused := range []bool{true, true, true, true, false, false} {
		got, _, err, _ := decodeBoth(other[i])
		require.NoError(t, err)
		if refused {
			assert.ErrorIs(t, got.err, equeue.ErrCorrupt, "answer %d", i)
		} else {
			assert.NoError(t, got.err, "answer %d", i)
		}
	}
	got, _, _, _ := decodeBoth(other[4])
	assert.Len(t, got.res.Messages, 3)
	// The bodies are the client's own: the answer's buffer may be reused.
	b := bytes.Clone(usual[0])
	var r pullReply
	require.NoError(t, r.decodeWire(b))
	clear(b)
	require.Len(t, r.res.Messages, 3)
	assert.Equal(t, bytes.Repeat([]byte{'a'}, 100), r.res.Messages[0].Body)
}
