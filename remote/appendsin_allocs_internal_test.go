package remote

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// A streamed request of SendAsync's appends (one message each) is decoded
// with allocations per request, not per append: the items, and the
// appends' requests and messages together. Each append's request and
// message used to be an allocation of their own, one per message of every
// SendAsync on the broker.
func TestAppendsIn_OneMessageAppendsAllocatePerRequest(t *testing.T) {
	const appends = 64
	items := make([]*pb.StreamAppend, appends)
	for i := range items {
		items[i] = &pb.StreamAppend{Seq: uint64(i + 1), Append: &pb.AppendRequest{Topic: "t",
			Messages: []*pb.Message{{Topic: "t", Body: []byte("body")}}}}
	}
	b, err := proto.Marshal(&pb.AppendStreamRequest{Appends: items})
	require.NoError(t, err)
	decode := func() {
		got, ok := decodeAppendsFast(bytes.Clone(b))
		require.True(t, ok)
		require.Len(t, got, appends)
	}
	// The copy of the request, the topic's string, the items, the appends.
	require.LessOrEqual(t, testing.AllocsPerRun(100, decode), 4.0, "allocations per request of %d appends", appends)
	// Each append still has its own request and message.
	got, ok := decodeAppendsFast(bytes.Clone(b))
	require.True(t, ok)
	for i := range got {
		require.NoError(t, got[i].d.err)
		req := got[i].d.req
		require.Len(t, req.Messages, 1)
		require.Equal(t, "body", string(req.Messages[0].Body))
		require.Equal(t, "t", req.Messages[0].Topic)
		if i > 0 {
			require.NotSame(t, got[i-1].d.req, req)
			require.NotSame(t, got[i-1].d.req.Messages[0], req.Messages[0])
		}
	}
}
