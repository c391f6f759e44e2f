package remote

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// answerBound is never below the encoded size, whatever the fields hold:
// the widest varints (negative numbers), durations, keys and both maps.
func TestAnswerBound_IsAnUpperBound(t *testing.T) {
	widest := &pb.Message{
		Id: strings.Repeat("i", 300), Topic: strings.Repeat("t", 127), Tag: "tag", Keys: []string{"a", strings.Repeat("k", 200), ""},
		Properties: map[string]string{"": "", "k": strings.Repeat("v", 200), strings.Repeat("x", 130): "y"},
		Body:       make([]byte, 70000), BornAtUnixNano: math.MinInt64, StoredAtUnixNano: math.MinInt64,
		DeliverAtUnixNano: math.MinInt64, ExpiresAtUnixNano: math.MinInt64, Queue: math.MinInt32, Offset: math.MinInt64,
		Attempt: math.MinInt32, SysProperties: map[string]string{"%ORIGIN_TOPIC": "t", "%RETRY": strings.Repeat("r", 150)},
		Delay: durationpb.New(time.Duration(math.MinInt64)), Ttl: &durationpb.Duration{Seconds: math.MinInt64, Nanos: math.MinInt32},
	}
	cases := map[string]*pb.PullResponse{
		"empty":  {},
		"widest": {Status: pb.PullStatus(math.MinInt32), NextOffset: math.MinInt64, MinOffset: math.MinInt64, MaxOffset: math.MinInt64, Expired: math.MinInt32, Priority: math.MinInt32, DeletedTopicRetries: math.MinInt32, Corrupt: []int64{-1, math.MinInt64, 5}, Messages: []*pb.Message{widest, widest}},
		"small":  {Status: pb.PullStatus_PULL_STATUS_FOUND, NextOffset: 3, Messages: []*pb.Message{{Body: []byte("x"), Offset: 1}, {Offset: 2, Topic: "t"}}},
	}
	for name, r := range cases {
		assert.GreaterOrEqual(t, answerBound(r), proto.Size(r), name)
	}
}
