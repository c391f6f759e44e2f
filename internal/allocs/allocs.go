// Package allocs measures what a piece of code allocates, for the tests
// that bound a decoder's allocations by the size of its input.
package allocs

import "runtime"

// Fewest returns the fewest bytes f allocated in three runs (the fewest, so
// that an allocation elsewhere in the process is not counted).
func Fewest(f func()) uint64 {
	least := ^uint64(0)
	var before, after runtime.MemStats
	for range 3 {
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// Bound is the most bytes decoding n bytes of crafted input may allocate:
// four times the input and a constant (the first part of a slab, errors).
func Bound(n int) uint64 { return 4*uint64(n) + 64<<10 }
