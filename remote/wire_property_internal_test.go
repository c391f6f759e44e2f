package remote

import (
	"bytes"
	"math"
	"math/rand/v2"
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

// The hand-written encoders and decoders checked against protobuf's on
// random messages (a fixed seed, so a failure repeats): each encoder writes
// what protobuf decodes to the message protobuf would have written, of the
// size protobuf reckons, and each decoder reads the hand encoder's bytes
// and protobuf's alike.

// wireRand draws the values of random wire messages: zeros, negatives and
// extremes often, as they are where encoders go wrong.
type wireRand struct{ *rand.Rand }

func newWireRand(seed uint64) wireRand { return wireRand{rand.New(rand.NewPCG(seed, 22))} }

func (r wireRand) int64() int64 {
	switch r.IntN(8) {
	case 0:
		return 0
	case 1:
		return -r.Int64N(1 << 40)
	case 2:
		return []int64{math.MinInt64, math.MaxInt64, math.MinInt32, math.MaxInt32, -1, 1, 127, 128}[r.IntN(8)]
	case 3:
		return r.Int64()
	default:
		return r.Int64N(1 << uint(1+r.IntN(40)))
	}
}

func (r wireRand) int() int { return int(r.int64()) }

func (r wireRand) str() string {
	if r.IntN(3) == 0 {
		return ""
	}
	const chars = "ab-é\u4e16\x00z"
	rs := []rune(chars)
	out := make([]rune, r.IntN(12))
	for i := range out {
		out[i] = rs[r.IntN(len(rs))]
	}
	return string(out)
}

func (r wireRand) time() time.Time {
	if r.IntN(3) == 0 {
		return time.Time{}
	}
	return time.Unix(0, r.int64())
}

func (r wireRand) strMap() map[string]string {
	if r.IntN(2) == 0 {
		return nil
	}
	m := map[string]string{}
	for range r.IntN(4) {
		m[r.str()] = r.str()
	}
	return m
}

func (r wireRand) message(durations bool) *equeue.Message {
	m := &equeue.Message{ID: r.str(), Topic: r.str(), Tag: r.str(), Properties: r.strMap(),
		BornAt: r.time(), StoredAt: r.time(), DeliverAt: r.time(), ExpiresAt: r.time(),
		Queue: r.int(), Offset: r.int64(), Attempt: r.int()}
	for range r.IntN(3) {
		m.Keys = append(m.Keys, r.str())
	}
	if n := r.IntN(40) - 5; n >= 0 {
		m.Body = make([]byte, n)
		for i := range m.Body {
			m.Body[i] = byte(r.IntN(256))
		}
	}
	if r.IntN(4) == 0 {
		m.ExpiresAt = time.Date(2500, 1, 1, 0, 0, 0, 0, time.UTC) // never, on the wire
	}
	if sys := r.strMap(); sys != nil {
		m.SetSysProperties(sys)
	}
	if durations && r.IntN(3) == 0 {
		m.Delay, m.TTL = time.Duration(r.int64()), time.Duration(r.int64())
	}
	return m
}

func (r wireRand) pullResult() equeue.PullResult {
	res := equeue.PullResult{Status: equeue.PullStatus(r.IntN(5) - 1), NextOffset: r.int64(), MinOffset: r.int64(),
		MaxOffset: r.int64(), Expired: r.int(), Priority: r.int(), DeletedTopicRetries: r.int()}
	if r.IntN(4) == 0 {
		res.Priority = r.IntN(4)
	}
	for range r.IntN(3) {
		res.Corrupt = append(res.Corrupt, r.int64())
	}
	for range r.IntN(6) {
		res.Messages = append(res.Messages, r.message(r.IntN(8) == 0))
	}
	return res
}

// pullReplyOf decodes an answer as the client does.
func pullReplyOf(t *testing.T, b []byte) pullReply {
	t.Helper()
	var r pullReply
	require.NoError(t, r.decodeWire(bytes.Clone(b)))
	return r
}

func TestPullAnswer_RandomSameAsProtobuf(t *testing.T) {
	r := newWireRand(1)
	for i := range 3000 {
		res := r.pullResult()
		limit := 1 << 20
		if r.IntN(2) == 0 {
			limit = 30 + r.IntN(600)
		}
		want, size, wantErr := sizedPullAnswer(res, limit, nil)
		out, ok, err := encodePullAnswer(res, limit)
		if wantErr != nil {
			require.Equal(t, wantErr, err, "case %d", i)
			continue
		}
		require.NoError(t, err, "case %d", i)
		require.True(t, ok, "case %d: left to protobuf", i)
		wire := *out.buf
		protoWire, err := proto.Marshal(want)
		require.NoError(t, err)

		// The same message, of the size protobuf reckons and the answer's
		// sizing counted, within the client's limit.
		var got pb.PullResponse
		require.NoError(t, proto.Unmarshal(wire, &got), "case %d", i)
		require.True(t, proto.Equal(want, &got), "case %d:\nhand %v\nprotobuf %v", i, &got, want)
		assert.Len(t, wire, len(protoWire), "case %d", i)
		assert.LessOrEqual(t, len(wire), size, "case %d: the answer's sizing", i)
		if len(res.Messages) > 0 {
			assert.LessOrEqual(t, len(wire), limit, "case %d: an answer with messages past the limit", i)
		}

		// The client reads both alike, as protobuf and pullResultFromPB do.
		ref, refErr := pullResultFromPB(want)
		for _, b := range [][]byte{wire, protoWire} {
			rep := pullReplyOf(t, b)
			assert.Equal(t, refErr != nil, rep.err != nil, "case %d", i)
			assert.Equal(t, ref, rep.res, "case %d", i)
		}
		bufferPool.Put(out.buf)
	}
}

func TestAppend_RandomSameAsProtobuf(t *testing.T) {
	r := newWireRand(2)
	syncs := []*equeue.SyncPolicy{nil, &syncAlways, &syncNever}
	for i := range 2000 {
		req := &equeue.AppendRequest{Topic: r.str(), Queue: r.int(), Sync: syncs[r.IntN(len(syncs))]}
		if r.IntN(6) == 0 {
			every := equeue.SyncInterval(time.Duration(1 + r.IntN(1e9)))
			req.Sync = &every
		}
		for range r.IntN(4) {
			req.Messages = append(req.Messages, r.message(r.IntN(4) == 0))
		}
		want, wantErr := appendToWire(req)
		wire, ok, err := encodeAppend(req)
		if wantErr != nil {
			require.Equal(t, wantErr, err, "case %d", i)
			continue
		}
		require.NoError(t, err, "case %d", i)
		require.True(t, ok, "case %d: left to protobuf", i)
		protoWire, err := proto.Marshal(want)
		require.NoError(t, err)
		var got pb.AppendRequest
		require.NoError(t, proto.Unmarshal(wire, &got), "case %d", i)
		require.True(t, proto.Equal(want, &got), "case %d:\nhand %v\nprotobuf %v", i, &got, want)
		assert.Len(t, wire, len(protoWire), "case %d", i)

		// The broker reads both alike, as protobuf and appendFromPB do.
		for _, b := range [][]byte{wire, protoWire} {
			got, ref, gotErr, refErr, refused := appendFromBoth(t, b)
			require.False(t, refused, "case %d", i)
			assert.Equal(t, ref, got, "case %d", i)
			assert.Equal(t, refErr, gotErr, "case %d", i)
		}
	}
}

func TestAppendAnswers_RandomSameAsProtobuf(t *testing.T) {
	r := newWireRand(3)
	for i := range 2000 {
		results := make([]streamOut, r.IntN(4))
		for j := range results {
			res := equeue.AppendResult{Queue: r.int(), FirstOffset: r.int64(), StoredAt: r.time(),
				Delayed: r.IntN(2) == 0, Duplicate: r.IntN(2) == 0}
			for range r.IntN(4) {
				res.IDs = append(res.IDs, r.str())
			}
			results[j] = streamOut{seq: uint64(r.int64()), res: res}
		}
		want := streamAnswerPB(results)
		protoWire, err := proto.Marshal(want)
		require.NoError(t, err)
		o, ok := streamAnswerOut(results).(*streamOuts)
		require.True(t, ok, "case %d: left to protobuf", i)
		wire := o.wireBuffers().Materialize()
		var got pb.AppendStreamResponse
		require.NoError(t, proto.Unmarshal(wire, &got), "case %d", i)
		require.True(t, proto.Equal(want, &got), "case %d", i)
		assert.Len(t, wire, len(protoWire), "case %d", i)
		for j := range results {
			want := protowire.SizeTag(streamResults) + protowire.SizeBytes(proto.Size(want.GetResults()[j]))
			assert.Equal(t, want, streamResultSize(&results[j]), "case %d", i)
		}
		for _, b := range [][]byte{wire, protoWire} {
			g, w, gotErr, wantErr := decodeStreamBoth(b)
			require.NoError(t, gotErr)
			require.NoError(t, wantErr)
			sameAnswers(t, w, g, "case %d", i)
		}

		// A unary answer: the first result's.
		if len(results) > 0 {
			unary := (&appendOut{res: results[0].res}).wireBuffers().Materialize()
			ref, err := proto.Marshal(appendToPB(results[0].res))
			require.NoError(t, err)
			var a, b appendReply
			require.NoError(t, a.decodeWire(unary))
			require.NoError(t, b.decodeWire(ref))
			assert.Equal(t, b.a, a.a, "case %d", i)
		}
	}
}

// answerBound bounds every answer, whatever its fields' values: a negative
// integer takes ten bytes, and the answer has seven such fields and the
// corrupt offsets' tag and length.
func TestAnswerBound_WidestFields(t *testing.T) {
	widest := &pb.PullResponse{Status: pb.PullStatus(-1), NextOffset: -1, MinOffset: -1, MaxOffset: -1,
		Corrupt: []int64{-1}, Expired: -1, Priority: -1, DeletedTopicRetries: -1}
	assert.GreaterOrEqual(t, answerBound(widest), proto.Size(widest))
	withMessage := proto.Clone(widest).(*pb.PullResponse)
	withMessage.Messages = []*pb.Message{{BornAtUnixNano: -1, StoredAtUnixNano: -1, DeliverAtUnixNano: -1,
		ExpiresAtUnixNano: -1, Queue: -1, Offset: -1, Attempt: -1,
		Delay: &durationpb.Duration{Seconds: -1, Nanos: -1}, Ttl: &durationpb.Duration{Seconds: -1, Nanos: -1}}}
	assert.GreaterOrEqual(t, answerBound(withMessage), proto.Size(withMessage))
}
