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

// appendCases are appends of every field the wire carries.
func appendCases() map[string]*equeue.AppendRequest {
	always, never, every := equeue.SyncAlways, equeue.SyncNever, equeue.SyncInterval(3*time.Millisecond)
	full := &equeue.Message{ID: "id", Topic: "orders", Tag: "eu", Keys: []string{"a", "", "b"},
		Properties: map[string]string{"x": "1", "": "", "y": ""}, Body: []byte("body"),
		BornAt: time.Unix(0, 5), StoredAt: time.Unix(3, 0), DeliverAt: time.Unix(-2, 7), ExpiresAt: time.Unix(1e9, 1),
		Queue: -3, Offset: math.MaxInt64, Attempt: 7, Delay: -1500 * time.Millisecond, TTL: 90 * time.Second}
	full.SetSysProperties(map[string]string{"origin": "o", "err": ""})
	never2262 := &equeue.Message{Body: []byte{1}, ExpiresAt: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}
	return map[string]*equeue.AppendRequest{
		"empty":      {},
		"one":        {Topic: "t", Messages: []*equeue.Message{{Body: []byte("hi")}}},
		"full":       {Topic: "orders", Queue: 1 << 40, Messages: []*equeue.Message{full, {}, full}, Sync: &always},
		"never":      {Topic: "t", Queue: -1, Messages: []*equeue.Message{never2262}, Sync: &never},
		"interval":   {Topic: "t", Messages: []*equeue.Message{{ID: "x"}}, Sync: &every},
		"big queue":  {Topic: "t", Messages: []*equeue.Message{{Queue: math.MinInt64, Attempt: math.MaxInt64}}},
		"empty body": {Topic: "t", Messages: []*equeue.Message{{Body: []byte{}}}},
	}
}

func TestEncodeAppend_SameAsProtobuf(t *testing.T) {
	for name, req := range appendCases() {
		t.Run(name, func(t *testing.T) {
			want, err := appendToWire(req)
			require.NoError(t, err)
			wire, ok, err := encodeAppend(req)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, proto.Size(want), len(wire))
			var got pb.AppendRequest
			require.NoError(t, proto.Unmarshal(wire, &got))
			assert.True(t, proto.Equal(want, &got), "encoded %v\nprotobuf %v", &got, want)

			// As an item of a stream request.
			items := []streamItem{{seq: 0, wire: wire}, {seq: 1 << 33, wire: wire}}
			r := encodeStreamRequest(items)
			var in pb.AppendStreamRequest
			require.NoError(t, proto.Unmarshal(*r.buf, &in))
			require.Len(t, in.GetAppends(), 2)
			for i, it := range in.GetAppends() {
				assert.Equal(t, items[i].seq, it.GetSeq())
				assert.True(t, proto.Equal(want, it.GetAppend()))
				s := &pipeSend{wire: wire}
				assert.Equal(t, proto.Size(&pb.StreamAppend{Seq: items[i].seq, Append: want}), s.itemSize(items[i].seq))
			}
		})
	}
}

func TestEncodeAppend_RefusesAsProtobuf(t *testing.T) {
	odd := equeue.SyncInterval(0)
	for name, req := range map[string]*equeue.AppendRequest{
		"nil message": {Topic: "t", Messages: []*equeue.Message{{}, nil}},
		"born 1600":   {Topic: "t", Messages: []*equeue.Message{{BornAt: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)}}},
		"deliver 3000": {Topic: "t", Messages: []*equeue.Message{{DeliverAt: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}},
			Sync: &odd},
	} {
		t.Run(name, func(t *testing.T) {
			_, want := appendToWire(req)
			require.Error(t, want)
			_, ok, err := encodeAppend(req)
			assert.False(t, ok)
			assert.Equal(t, want.Error(), err.Error())
			_, err = appendRequest(req)
			assert.Equal(t, want.Error(), err.Error())
		})
	}
	// A string protobuf cannot encode is left to it: it refuses it as before.
	for _, req := range []*equeue.AppendRequest{
		{Topic: "\xff", Messages: []*equeue.Message{{}}},
		{Topic: "t", Messages: []*equeue.Message{{Keys: []string{"\xfe"}}}},
		{Topic: "t", Messages: []*equeue.Message{{Properties: map[string]string{"k": "\xfe"}}}},
	} {
		_, ok, err := encodeAppend(req)
		require.NoError(t, err)
		assert.False(t, ok)
		in, err := appendRequest(req)
		require.NoError(t, err)
		_, err = wireCodec{}.Marshal(in)
		assert.ErrorContains(t, err, "UTF-8")
	}
}
