package remote

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// appendOutCases are append results of every shape an answer can take.
func appendOutCases() []equeue.AppendResult {
	return []equeue.AppendResult{
		{},
		{Queue: 3, FirstOffset: 1 << 40, StoredAt: time.Unix(0, 1_700_000_000_123_456_789), IDs: []string{"01J0000000000000000000000A", "b"}},
		{Queue: -1, FirstOffset: -5, StoredAt: time.Unix(-1, 0), IDs: []string{""}, Delayed: true},
		{Queue: math.MaxInt32 + 10, IDs: []string{"x", "", "é"}, Duplicate: true},
		{Queue: math.MinInt32 - 10, Delayed: true, Duplicate: true},
	}
}

// wireBytes is what the codec sends for v.
func wireBytes(t testing.TB, v any) []byte {
	t.Helper()
	bs, err := wireCodec{}.Marshal(v)
	require.NoError(t, err)
	defer bs.Free()
	return bs.Materialize()
}

// sameAnswerBytes checks that an answer is sent as protobuf would send
// want, by this package's codec and by protobuf's own.
func sameAnswerBytes(t *testing.T, want proto.Message, out any, msgAndArgs ...any) {
	t.Helper()
	wb, err := proto.Marshal(want)
	require.NoError(t, err)
	assert.Equal(t, string(wb), string(wireBytes(t, out)), msgAndArgs...)
	// Another codec marshals it as a protobuf message.
	pm, ok := out.(proto.Message)
	require.True(t, ok, msgAndArgs...)
	ob, err := proto.Marshal(pm)
	require.NoError(t, err)
	assert.Equal(t, string(wb), string(ob), msgAndArgs...)
}

func TestAppendAnswerOut_SameAsProtobuf(t *testing.T) {
	for i, res := range appendOutCases() {
		out := appendAnswerOut(res)
		require.IsType(t, &appendOut{}, out, "case %d", i)
		sameAnswerBytes(t, appendToPB(res), out, "case %d", i)
	}
	// An ID protobuf refuses is left to it.
	out := appendAnswerOut(equeue.AppendResult{IDs: []string{"a", "\xff"}})
	require.IsType(t, &pb.AppendResponse{}, out)
	_, err := wireCodec{}.Marshal(out)
	assert.Error(t, err)
}

func TestStreamAnswerOut_SameAsProtobuf(t *testing.T) {
	var results []streamOut
	for i, res := range appendOutCases() {
		results = append(results, streamOut{seq: uint64(i) << (8 * i), res: res})
	}
	out := streamAnswerOut(results)
	require.IsType(t, &streamOuts{}, out)
	sameAnswerBytes(t, streamAnswerPB(results), out)
	// The client reads it as it read protobuf's.
	var got streamAnswers
	require.NoError(t, got.decodeWire(wireBytes(t, out)))
	require.Len(t, got.results, len(results))
	for i, r := range results {
		assert.Equal(t, r.seq, got.results[i].seq)
		assert.Nil(t, got.results[i].err)
		res, err := got.results[i].resp.result(len(r.res.IDs))
		require.NoError(t, err)
		assert.Equal(t, toInt32(r.res.Queue), int32(res.Queue))
		assert.Equal(t, r.res.FirstOffset, res.FirstOffset)
		assert.True(t, r.res.StoredAt.Equal(res.StoredAt))
		assert.Equal(t, len(r.res.IDs), len(res.IDs))
		for j, id := range r.res.IDs {
			assert.Equal(t, id, res.IDs[j])
		}
		assert.Equal(t, r.res.Delayed, res.Delayed)
		assert.Equal(t, r.res.Duplicate, res.Duplicate)
	}
	// An error, or an ID protobuf refuses, leaves the answer to protobuf.
	failed := append(results[:2:2], streamOut{seq: 7, err: &pb.PullError{Code: 8, Message: "busy", Reasons: "busy"}})
	out = streamAnswerOut(failed)
	require.IsType(t, &pb.AppendStreamResponse{}, out)
	assert.True(t, proto.Equal(streamAnswerPB(failed), out.(proto.Message)))
	assert.Equal(t, failed[2].err, out.(*pb.AppendStreamResponse).GetResults()[2].GetError())
	bad := append(results[:1:1], streamOut{seq: 2, res: equeue.AppendResult{IDs: []string{"\xff"}}})
	require.IsType(t, &pb.AppendStreamResponse{}, streamAnswerOut(bad))
}

func FuzzAppendAnswerOut(f *testing.F) {
	f.Add(uint64(0), int64(0), int64(0), int64(0), "", 0, false, false)
	f.Add(uint64(1<<63), int64(math.MinInt64), int64(-1), int64(math.MaxInt64), "01J0000000000000000000000A", 3, true, false)
	f.Add(uint64(9), int64(math.MaxInt32+1), int64(1<<40), int64(1), "é\xff", 1, false, true)
	f.Fuzz(func(t *testing.T, seq uint64, queue, first, stored int64, id string, ids int, delayed, duplicate bool) {
		res := equeue.AppendResult{Queue: int(queue), FirstOffset: first, Delayed: delayed, Duplicate: duplicate}
		if stored != 0 {
			res.StoredAt = time.Unix(0, stored)
		}
		for i := range ids % 8 {
			res.IDs = append(res.IDs, id[:min(i, len(id))])
		}
		if out := appendAnswerOut(res); idsValid(res.IDs) {
			sameAnswerBytes(t, appendToPB(res), out)
		} else {
			require.IsType(t, &pb.AppendResponse{}, out)
		}
		results := []streamOut{{seq: seq, res: res}, {seq: seq / 3}}
		if out := streamAnswerOut(results); idsValid(res.IDs) {
			sameAnswerBytes(t, streamAnswerPB(results), out)
		} else {
			require.IsType(t, &pb.AppendStreamResponse{}, out)
		}
	})
}
