package remote

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// The room a PullMany answer keeps for the laterPull items of the pulls
// to come is reckoned without making them: it is their encoded size, as
// the answer's field, at every width of their offset.
func TestLaterSize_IsTheItemsEncodedSize(t *testing.T) {
	for _, off := range []int64{0, 1, 127, 128, 1 << 40, math.MaxInt64, -1} {
		p := &equeue.PullRequest{Topic: "t", Offset: off}
		want := proto.Size(&pb.PullManyResponse{Items: []*pb.PullManyItem{laterPull(p)}})
		assert.Equal(t, want, laterSize(p), "offset %d", off)
	}
}
