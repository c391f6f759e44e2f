package remote

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// appendRequestSeeds are encoded Append requests: the usual shapes, which
// the broker decodes directly, and others, which it leaves to protobuf.
func appendRequestSeeds(t testing.TB) (usual, other [][]byte) {
	enc := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		require.NoError(t, err)
		return b
	}
	for name, req := range appendCases() {
		in, err := appendToWire(req)
		require.NoError(t, err)
		if name == "full" || name == "interval" {
			other = append(other, enc(in)) // delays, TTLs, a sync interval
			continue
		}
		usual = append(usual, enc(in))
	}
	msg := &pb.Message{Id: "i", Topic: "t", Body: []byte("b"), Properties: map[string]string{"p": "v"}, Keys: []string{"k"}}
	usual = append(usual,
		enc(&pb.AppendRequest{Topic: "t", Messages: []*pb.Message{msg, msg}, Sync: pb.SyncPolicy_SYNC_POLICY_NEVER}),
		enc(&pb.AppendRequest{Topic: "t", Messages: []*pb.Message{msg}, Sync: pb.SyncPolicy(42)}),
		enc(&pb.AppendRequest{Topic: "t", Sync: pb.SyncPolicy_SYNC_POLICY_INTERVAL}),
		enc(&pb.AppendRequest{Topic: "t", Messages: []*pb.Message{msg}, Sync: pb.SyncPolicy_SYNC_POLICY_INTERVAL}),
	)
	unknown := protowire.AppendTag(enc(&pb.AppendRequest{Topic: "t", Messages: []*pb.Message{msg}}), 77, protowire.VarintType)
	unknown = protowire.AppendVarint(unknown, 1)
	bad := enc(&pb.AppendRequest{Topic: "t", Messages: []*pb.Message{{Ttl: &durationpb.Duration{Nanos: -1, Seconds: 1}}}})
	other = append(other, unknown, bad, enc(&pb.AppendRequest{Topic: "t", SyncInterval: durationpb.New(time.Second)}), []byte{0x0a, 0x01, 0xff})
	return usual, other
}

// appendFromBoth decodes b directly (as the broker's codec would) and as
// protobuf and appendFromPB do.
func appendFromBoth(t testing.TB, b []byte) (got, want *equeue.AppendRequest, gotErr, wantErr error, refused bool) {
	in := &appendIn{direct: true}
	decodeErr := in.decodeWire(bytes.Clone(b))
	var ref pb.AppendRequest
	protoErr := proto.Unmarshal(b, &ref)
	require.Equal(t, protoErr != nil, decodeErr != nil, "decoded: %v, protobuf: %v", decodeErr, protoErr)
	if protoErr != nil {
		return nil, nil, nil, nil, true // the call fails with protobuf's error
	}
	if in.decoded {
		got, gotErr = in.d.req, in.d.err
	} else {
		got, gotErr = appendFromPB(&in.AppendRequest)
	}
	want, wantErr = appendFromPB(&ref)
	return got, want, gotErr, wantErr, false
}

func TestAppendIn_SameAsProtobuf(t *testing.T) {
	usual, other := appendRequestSeeds(t)
	for i, b := range usual {
		_, ok := decodeAppendFast(bytes.Clone(b), nil, nil)
		assert.True(t, ok, "usual request %d left to protobuf", i)
	}
	for i, b := range other {
		_, ok := decodeAppendFast(bytes.Clone(b), nil, nil)
		assert.False(t, ok, "request %d of another shape decoded directly", i)
	}
	for i, b := range append(usual, other...) {
		got, want, gotErr, wantErr, refused := appendFromBoth(t, b)
		if refused {
			continue
		}
		assert.Equal(t, want, got, "request %d", i)
		assert.Equal(t, wantErr, gotErr, "request %d", i)
	}
	// An application's interceptor gets the request as protobuf decodes it.
	in := &appendIn{}
	require.NoError(t, in.decodeWire(usual[0]))
	assert.False(t, in.decoded)
}

func TestAppendsIn_SameAsProtobuf(t *testing.T) {
	usual, other := appendRequestSeeds(t)
	var items []*pb.StreamAppend
	for i, b := range usual {
		var in pb.AppendRequest
		require.NoError(t, proto.Unmarshal(b, &in))
		items = append(items, &pb.StreamAppend{Seq: uint64(i), Append: &in})
	}
	items = append(items, &pb.StreamAppend{Seq: 99}) // no append
	// Appends to one topic and to others, in turn (the decoder reuses a
	// topic's string from one append to the next).
	for i, topic := range []string{"a", "a", "b", "", "a"} {
		items = append(items, &pb.StreamAppend{Seq: uint64(100 + i), Append: &pb.AppendRequest{Topic: topic,
			Messages: []*pb.Message{{Topic: topic, Body: []byte{byte(i)}}, {Topic: "a"}}}})
	}
	b, err := proto.Marshal(&pb.AppendStreamRequest{Appends: items})
	require.NoError(t, err)
	check := func(b []byte, direct bool) {
		t.Helper()
		in := &appendsIn{direct: true}
		require.NoError(t, in.decodeWire(bytes.Clone(b)))
		assert.Equal(t, direct, in.items != nil)
		var ref appendsIn
		require.NoError(t, proto.Unmarshal(b, &ref.AppendStreamRequest))
		got, want := in.appends(), ref.appends()
		require.Len(t, got, len(want))
		for i := range want {
			assert.Equal(t, want[i].seq, got[i].seq)
			assert.Equal(t, want[i].present, got[i].present)
			assert.Equal(t, want[i].d.topic, got[i].d.topic)
			wr, werr := want[i].request()
			gr, gerr := got[i].request()
			assert.Equal(t, wr, gr)
			assert.Equal(t, werr, gerr)
		}
	}
	check(b, true)
	check(nil, true)
	var in pb.AppendRequest
	require.NoError(t, proto.Unmarshal(other[0], &in))
	b, err = proto.Marshal(&pb.AppendStreamRequest{Appends: append(items, &pb.StreamAppend{Seq: 7, Append: &in})})
	require.NoError(t, err)
	check(b, false)
}

func FuzzAppendIn(f *testing.F) {
	usual, other := appendRequestSeeds(f)
	for _, b := range append(usual, other...) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, want, gotErr, wantErr, refused := appendFromBoth(t, b)
		if refused {
			return
		}
		assert.Equal(t, want, got)
		assert.Equal(t, wantErr, gotErr)
	})
}

// FuzzAppendsIn checks that a stream request decoded directly gives every
// append protobuf's decoding gives, or the same refusal.
func FuzzAppendsIn(f *testing.F) {
	usual, other := appendRequestSeeds(f)
	var items []*pb.StreamAppend // the usual ones: decoded directly together
	for i, b := range append(usual, other...) {
		var in pb.AppendRequest
		if proto.Unmarshal(b, &in) != nil {
			continue
		}
		if i < len(usual) {
			items = append(items, &pb.StreamAppend{Seq: uint64(i), Append: &in})
		}
		one, err := proto.Marshal(&pb.AppendStreamRequest{Appends: []*pb.StreamAppend{{Seq: uint64(i), Append: &in}}})
		require.NoError(f, err)
		f.Add(one)
	}
	for _, topic := range []string{"a", "b", "a"} {
		items = append(items, &pb.StreamAppend{Seq: 1, Append: &pb.AppendRequest{Topic: topic, Messages: []*pb.Message{{Topic: topic}}}})
	}
	all, err := proto.Marshal(&pb.AppendStreamRequest{Appends: items})
	require.NoError(f, err)
	f.Add(all)
	f.Fuzz(func(t *testing.T, b []byte) {
		in := &appendsIn{direct: true}
		gotErr := in.decodeWire(bytes.Clone(b))
		var ref appendsIn
		wantErr := proto.Unmarshal(b, &ref.AppendStreamRequest)
		require.Equal(t, wantErr != nil, gotErr != nil, "direct %v, protobuf %v", gotErr, wantErr)
		if wantErr != nil {
			return
		}
		got, want := in.appends(), ref.appends()
		require.Len(t, got, len(want))
		for i := range want {
			assert.Equal(t, want[i].seq, got[i].seq)
			assert.Equal(t, want[i].present, got[i].present)
			assert.Equal(t, want[i].d.topic, got[i].d.topic)
			wr, werr := want[i].request()
			gr, gerr := got[i].request()
			assert.Equal(t, wr, gr)
			assert.Equal(t, werr, gerr)
		}
	})
}
