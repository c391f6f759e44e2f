package remote

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/metadata"
)

// TestPullMany_PutOffHeaderIgnoresWhatIsNoIndex: the client reads from
// the mdPullLater header only the indexes of pulls of its call; anything
// else a broker (or a proxy) put there is ignored, not an error.
func TestPullMany_PutOffHeaderIgnoresWhatIsNoIndex(t *testing.T) {
	assert.Empty(t, putOff(metadata.MD{}, 3))
	assert.Equal(t, []int{0, 2}, putOff(metadata.Pairs(mdPullLater, "0,2"), 3))
	assert.Equal(t, []int{1, 2}, putOff(metadata.Pairs(mdPullLater, "x,-1,3, 1,,99999999999999999999", mdPullLater, "2"), 3))
}
