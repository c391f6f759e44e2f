package remote

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// pullAnswerSeeds are encoded pull answers: the usual shapes, which the
// direct decoder takes, and others, which it leaves to protobuf.
func pullAnswerSeeds(t testing.TB) (usual, other [][]byte) {
	enc := func(r *pb.PullResponse) []byte {
		b, err := proto.Marshal(r)
		require.NoError(t, err)
		return b
	}
	full := &pb.Message{Id: "id-1", Topic: "orders", Tag: "eu", Keys: []string{"k1", "", "k2"},
		Properties: map[string]string{"a": "1", "": "empty key"}, Body: []byte("hello"),
		BornAtUnixNano: 1, StoredAtUnixNano: 1_700_000_000_000_000_000, DeliverAtUnixNano: -5, ExpiresAtUnixNano: 9,
		Queue: -3, Offset: 1 << 40, Attempt: 2, SysProperties: map[string]string{"origin": "x"}}
	plain := &pb.Message{Id: "id-2", Topic: "orders", Body: []byte{0, 1, 2}, StoredAtUnixNano: 7, Offset: 8}
	other2 := &pb.Message{Id: "id-3", Topic: "other", Tag: "eu", Offset: 9}
	usual = [][]byte{
		enc(&pb.PullResponse{}),
		enc(&pb.PullResponse{Status: pb.PullStatus_PULL_STATUS_NO_NEW_MESSAGE, NextOffset: 12, MinOffset: 3, MaxOffset: 12}),
		enc(&pb.PullResponse{Messages: []*pb.Message{full, plain, other2, {}}, NextOffset: 10, MaxOffset: 99,
			Corrupt: []int64{4, -1}, Expired: 3, Status: pb.PullStatus(77), DeletedTopicRetries: 5}),
		enc(&pb.PullResponse{Messages: []*pb.Message{plain, plain, plain}}),
		enc(&pb.PullResponse{Messages: []*pb.Message{plain, other2}, Priority: 2}),
		enc(&pb.PullResponse{Status: pb.PullStatus_PULL_STATUS_NO_NEW_MESSAGE, Priority: 1}),
	}
	// A repeated scalar field sent twice (last wins), and corrupt
	// offsets unpacked.
	b := enc(&pb.PullResponse{Messages: []*pb.Message{plain}, NextOffset: 1})
	b = protowire.AppendTag(b, pullNextOffset, protowire.VarintType)
	b = protowire.AppendVarint(b, 5)
	b = protowire.AppendTag(b, pullCorrupt, protowire.VarintType)
	b = protowire.AppendVarint(b, 6)
	usual = append(usual, b)

	withDelay := proto.Clone(plain).(*pb.Message)
	withDelay.Delay = durationpb.New(3)
	badDelay := proto.Clone(plain).(*pb.Message)
	badDelay.Ttl = &durationpb.Duration{Seconds: 1, Nanos: -1}
	unknown := enc(&pb.PullResponse{Messages: []*pb.Message{plain}})
	unknown = protowire.AppendTag(unknown, 99, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, []byte("x"))
	var badMsg []byte // proto.Marshal refuses to write it
	badMsg = protowire.AppendTag(badMsg, msgID, protowire.BytesType)
	badMsg = protowire.AppendString(badMsg, "\xff\xfe")
	badUTF8 := protowire.AppendTag(nil, pullMessages, protowire.BytesType)
	badUTF8 = protowire.AppendBytes(badUTF8, badMsg)
	truncated := enc(&pb.PullResponse{Messages: []*pb.Message{full}})
	truncated = truncated[:len(truncated)-3]
	other = [][]byte{
		enc(&pb.PullResponse{Messages: []*pb.Message{withDelay}}),
		enc(&pb.PullResponse{Messages: []*pb.Message{badDelay}}),
		unknown, badUTF8, truncated, {0xff},
	}
	return usual, other
}

// decodeBoth decodes b with the direct decoder (as the codec would) and as
// the generated client and pullResultFromPB do.
func decodeBoth(b []byte) (got, want pullReply, gotErr, wantErr error) {
	gotErr = got.decodeWire(bytes.Clone(b))
	var resp pb.PullResponse
	if wantErr = proto.Unmarshal(b, &resp); wantErr == nil {
		want.res, want.err = pullResultFromPB(&resp)
	}
	return got, want, gotErr, wantErr
}

// ownedSame reports whether decoding b as the codec does (decodeOwned, on
// a copy of its own) gives what decodeWire gives.
func ownedSame(b []byte) bool {
	var wire, owned pullReply
	wireErr := wire.decodeWire(bytes.Clone(b))
	ownedErr := owned.decodeOwned(bytes.Clone(b))
	return (wireErr != nil) == (ownedErr != nil) && (wire.err != nil) == (owned.err != nil) &&
		reflect.DeepEqual(wire.res, owned.res)
}

// checkDecoders checks that the direct decoder takes the usual answers and
// leaves the others to protobuf, and that both decoders, and the codec's
// owned decoding, give every answer the same result or refusal.
func checkDecoders(t *testing.T, usual, other [][]byte) {
	t.Helper()
	for i, b := range usual {
		_, ok := decodePullFast(b, false)
		assert.True(t, ok, "usual answer %d left to protobuf", i)
	}
	for i, b := range other {
		_, ok := decodePullFast(b, false)
		assert.False(t, ok, "answer %d of another shape decoded directly", i)
	}
	for i, b := range append(usual, other...) {
		assert.True(t, ownedSame(b), "answer %d: decodeOwned and decodeWire differ", i)
		got, want, gotErr, wantErr := decodeBoth(b)
		assert.Equal(t, wantErr != nil, gotErr != nil, "answer %d: call error %v, protobuf's %v", i, gotErr, wantErr)
		assert.Equal(t, want.err != nil, got.err != nil, "answer %d: decode error %v, protobuf's %v", i, got.err, want.err)
		assert.Equal(t, want.res, got.res, "answer %d", i)
	}
}

func TestPullReply_SameAsProtobuf(t *testing.T) {
	usual, other := pullAnswerSeeds(t)
	checkDecoders(t, usual, other)
	// A message's properties, keys and sys properties arrive as sent.
	got, _, err, _ := decodeBoth(usual[2])
	require.NoError(t, err)
	m := got.res.Messages[0]
	assert.Equal(t, map[string]string{"a": "1", "": "empty key"}, m.Properties)
	assert.Equal(t, []string{"k1", "", "k2"}, m.Keys)
	assert.Equal(t, map[string]string{"origin": "x"}, m.SysProperties())
	assert.Nil(t, got.res.Messages[3].Body)
}

// A body handed to the application may be appended to without touching
// the next message's bytes, and the answer's buffer may be reused.
func TestPullReply_BodiesAreOwned(t *testing.T) {
	usual, _ := pullAnswerSeeds(t)
	b := bytes.Clone(usual[3])
	var r pullReply
	require.NoError(t, r.decodeWire(b))
	clear(b)
	require.Len(t, r.res.Messages, 3)
	_ = append(r.res.Messages[0].Body, 9, 9, 9)
	for _, m := range r.res.Messages {
		assert.Equal(t, []byte{0, 1, 2}, m.Body)
		assert.Equal(t, "id-2", m.ID)
	}
}

func FuzzPullReply(f *testing.F) {
	usual, other := pullAnswerSeeds(f)
	susual, sother := storedAnswerSeeds(f)
	for _, b := range slices.Concat(usual, other, susual, sother) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !ownedSame(b) {
			t.Fatal("decodeOwned and decodeWire differ")
		}
		got, want, gotErr, wantErr := decodeBoth(b)
		if (gotErr != nil) != (wantErr != nil) || (got.err != nil) != (want.err != nil) {
			t.Fatalf("errors differ: direct %v / %v, protobuf %v / %v", gotErr, got.err, wantErr, want.err)
		}
		assert.Equal(t, want.res, got.res)
	})
}
