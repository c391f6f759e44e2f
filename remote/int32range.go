package remote

import (
	"fmt"
	"math"

	"github.com/equeue-go/equeue"
)

// countInt32 narrows v, a count the broker acts on or stores (a queue or
// priority count, an attempt count), for the wire, which carries it as
// an int32. Clamped, a value out of that range would be another count
// (an attempt count of 2^31-1 stored for a commit, say): it is refused
// with equeue.ErrInvalidArgument, naming what and the caller's value.
func countInt32(what string, v int) (int32, error) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("%w: %s %d is beyond the range the wire carries (int32)", equeue.ErrInvalidArgument, what, v)
	}
	return int32(v), nil
}
