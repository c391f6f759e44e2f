package remote

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// streamAnswerSeeds are encoded AppendStream answers: the usual shapes,
// which the direct decoder takes, and others, which it leaves to protobuf.
func streamAnswerSeeds(t testing.TB) (usual, other [][]byte) {
	enc := func(r *pb.AppendStreamResponse) []byte {
		b, err := proto.Marshal(r)
		require.NoError(t, err)
		return b
	}
	ok1 := &pb.StreamAppendResult{Seq: 1, Response: &pb.AppendResponse{Queue: 2, FirstOffset: 10, StoredAtUnixNano: 1_700_000_000_000_000_000,
		Ids: []string{"a", "b", ""}}}
	ok2 := &pb.StreamAppendResult{Seq: 1 << 40, Response: &pb.AppendResponse{Queue: -1, FirstOffset: -1, Ids: []string{"x"}, Delayed: true, Duplicate: true}}
	usual = [][]byte{
		enc(&pb.AppendStreamResponse{}),
		enc(&pb.AppendStreamResponse{Draining: true}),
		enc(&pb.AppendStreamResponse{Results: []*pb.StreamAppendResult{ok1, ok2, {Seq: 3}}}),
		enc(&pb.AppendStreamResponse{Results: []*pb.StreamAppendResult{ok2}, Draining: true}),
	}
	failed := enc(&pb.AppendStreamResponse{Results: []*pb.StreamAppendResult{ok1, {Seq: 2, Error: &pb.PullError{Code: 8, Message: "busy", Reasons: "busy"}}}})
	// A second response in one result: protobuf merges the two.
	twice := protowire.AppendTag(nil, resultSeq, protowire.VarintType)
	twice = protowire.AppendVarint(twice, 4)
	for _, r := range []*pb.AppendResponse{{Queue: 1, Ids: []string{"p"}}, {FirstOffset: 5, Ids: []string{"q"}}} {
		rb, err := proto.Marshal(r)
		require.NoError(t, err)
		twice = protowire.AppendTag(twice, resultResponse, protowire.BytesType)
		twice = protowire.AppendBytes(twice, rb)
	}
	merged := protowire.AppendTag(nil, streamResults, protowire.BytesType)
	merged = protowire.AppendBytes(merged, twice)
	var badID []byte
	badID = protowire.AppendTag(badID, answerIDs, protowire.BytesType)
	badID = protowire.AppendString(badID, "\xff")
	badRes := protowire.AppendTag(nil, resultResponse, protowire.BytesType)
	badRes = protowire.AppendBytes(badRes, badID)
	bad := protowire.AppendTag(nil, streamResults, protowire.BytesType)
	bad = protowire.AppendBytes(bad, badRes)
	unknown := protowire.AppendTag(enc(&pb.AppendStreamResponse{Results: []*pb.StreamAppendResult{ok1}}), 9, protowire.VarintType)
	unknown = protowire.AppendVarint(unknown, 1)
	truncated := usual[2][:len(usual[2])-2]
	other = [][]byte{failed, merged, bad, unknown, truncated, {0x0a}}
	return usual, other
}

// decodeStreamBoth decodes b directly (as the codec would) and as the
// generated stream would, then as the client read it before.
func decodeStreamBoth(b []byte) (got, want streamAnswers, gotErr, wantErr error) {
	gotErr = got.decodeWire(bytes.Clone(b))
	var resp pb.AppendStreamResponse
	if wantErr = proto.Unmarshal(b, &resp); wantErr == nil {
		want.draining = resp.GetDraining()
		want.results = []streamAnswer{}
		for _, r := range resp.GetResults() {
			want.results = append(want.results, streamAnswer{seq: r.GetSeq(), err: r.GetError(), resp: answerFromPB(r.GetResponse())})
		}
	}
	return got, want, gotErr, wantErr
}

// sameAnswers compares decoded answers, errors by content.
func sameAnswers(t testing.TB, want, got streamAnswers, msgAndArgs ...any) {
	assert.Equal(t, want.draining, got.draining, msgAndArgs...)
	require.Equal(t, len(want.results), len(got.results), msgAndArgs...)
	for i := range want.results {
		w, g := want.results[i], got.results[i]
		assert.True(t, proto.Equal(w.err, g.err), msgAndArgs...)
		w.err, g.err = nil, nil
		assert.Equal(t, w, g, msgAndArgs...)
	}
}

func TestStreamAnswers_SameAsProtobuf(t *testing.T) {
	usual, other := streamAnswerSeeds(t)
	for i, b := range usual {
		var a streamAnswers
		assert.True(t, a.decodeFast(b), "usual answer %d left to protobuf", i)
	}
	for i, b := range other {
		var a streamAnswers
		assert.False(t, a.decodeFast(b), "answer %d of another shape decoded directly", i)
	}
	for i, b := range append(usual, other...) {
		got, want, gotErr, wantErr := decodeStreamBoth(b)
		require.Equal(t, wantErr != nil, gotErr != nil, "answer %d: %v, protobuf's %v", i, gotErr, wantErr)
		if wantErr == nil {
			sameAnswers(t, want, got, "answer %d", i)
		}
	}
	got, _, err, _ := decodeStreamBoth(usual[2])
	require.NoError(t, err)
	res, err := got.results[0].resp.result(3)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", ""}, res.IDs)
	_, err = got.results[0].resp.result(2)
	assert.ErrorContains(t, err, "broker returned 3 IDs for 2 messages")
}

func FuzzStreamAnswers(f *testing.F) {
	usual, other := streamAnswerSeeds(f)
	for _, b := range append(usual, other...) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, want, gotErr, wantErr := decodeStreamBoth(b)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("errors differ: direct %v, protobuf %v", gotErr, wantErr)
		}
		if wantErr == nil {
			sameAnswers(t, want, got)
		}
	})
}

func FuzzAppendReply(f *testing.F) {
	for _, r := range []*pb.AppendResponse{{}, {Queue: -2, FirstOffset: -1, StoredAtUnixNano: 9, Ids: []string{"a", ""}, Delayed: true, Duplicate: true}} {
		b, err := proto.Marshal(r)
		require.NoError(f, err)
		f.Add(b)
		f.Add(protowire.AppendVarint(protowire.AppendTag(b, 9, protowire.VarintType), 3))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got appendReply
		gotErr := got.decodeWire(bytes.Clone(b))
		var resp pb.AppendResponse
		wantErr := proto.Unmarshal(b, &resp)
		require.Equal(t, wantErr != nil, gotErr != nil, "direct %v, protobuf %v", gotErr, wantErr)
		if wantErr == nil {
			want := answerFromPB(&resp)
			if len(want.ids) == 0 {
				want.ids = nil
			}
			if len(got.a.ids) == 0 {
				got.a.ids = nil
			}
			assert.Equal(t, want, got.a)
		}
	})
}
