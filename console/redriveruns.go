package console

import (
	"slices"

	"github.com/equeue-go/equeue"
)

// redriveRuns turns the offsets of the dead letters ticked on the page
// into the fewest redrive ranges: each run of consecutive offsets is one
// request, From its first to To past its last. A range passes by a dead
// letter listed redriven, also one whose redriven mark was lost, where
// naming its offset (RedriveRequest.Offsets) would send it back again.
// The page offers no checkbox for a row listed redriven; it does for a row
// too large to list, whose state it cannot show: ticking it is no word
// that it goes back a second time. Offsets must be below math.MaxInt64.
func redriveRuns(offsets []int64) []equeue.RedriveRequest {
	sorted := slices.Compact(slices.Sorted(slices.Values(offsets)))
	var runs []equeue.RedriveRequest
	for _, off := range sorted {
		if n := len(runs); n > 0 && runs[n-1].To == off {
			runs[n-1].To++
			continue
		}
		runs = append(runs, equeue.RedriveRequest{From: off, To: off + 1})
	}
	return runs
}
