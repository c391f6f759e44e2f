package remote

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// The codec writes protobuf's bytes, small and large, and reads them back
// from a message split in pieces as it arrives from the network.
func TestWireCodec_RoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 10, 5000} {
		msgs := make([]*pb.Message, n)
		for i := range msgs {
			msgs[i] = &pb.Message{Id: "id", Topic: "t", Body: bytes.Repeat([]byte{byte(i)}, 100), Offset: int64(i)}
		}
		in := &pb.PullResponse{Messages: msgs, NextOffset: int64(n)}
		data, err := wireCodec{}.Marshal(in)
		require.NoError(t, err)
		want, err := proto.Marshal(in)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, data.Materialize()), "%d messages", n)
		// Split in three pieces, as reads from the socket may be.
		b := data.Materialize()
		data.Free()
		split := mem.BufferSlice{mem.SliceBuffer(b[:len(b)/3]), mem.SliceBuffer(b[len(b)/3 : 2*len(b)/3]), mem.SliceBuffer(b[2*len(b)/3:])}
		var out pb.PullResponse
		require.NoError(t, wireCodec{}.Unmarshal(split, &out))
		assert.True(t, proto.Equal(in, &out))
	}
	_, err := wireCodec{}.Marshal(struct{}{})
	assert.Error(t, err)
	assert.Error(t, wireCodec{}.Unmarshal(nil, &struct{}{}))
	assert.Equal(t, "proto", wireCodec{}.Name())
}

// A pull reply decoded by the codec keeps its messages' bodies in a copy
// of its own: the answer's buffers, split as they come from the socket,
// may be overwritten and reused afterwards, for field-by-field and stored
// answers alike.
func TestWireCodec_PullReplyOwnsItsAnswer(t *testing.T) {
	usual, _ := pullAnswerSeeds(t)
	stored, _ := storedAnswerSeeds(t)
	for i, answer := range [][]byte{usual[3], stored[0]} {
		var want pullReply
		require.NoError(t, want.decodeWire(bytes.Clone(answer)))
		require.NotEmpty(t, want.res.Messages)
		for _, pieces := range []int{1, 2} {
			b := bytes.Clone(answer)
			data := mem.BufferSlice{mem.SliceBuffer(b)}
			if pieces == 2 {
				data = mem.BufferSlice{mem.SliceBuffer(b[:len(b)/2]), mem.SliceBuffer(b[len(b)/2:])}
			}
			var got pullReply
			require.NoError(t, wireCodec{}.Unmarshal(data, &got))
			clear(b)
			require.NoError(t, got.err)
			assert.Equal(t, want.res, got.res, "answer %d in %d pieces", i, pieces)
		}
	}
}
