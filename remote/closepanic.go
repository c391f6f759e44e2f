package remote

// forEach runs f on each of xs, in order. A call of f that panics (a
// callback's panic, on a Close's goroutine), or ends its goroutine, does
// not keep f from running on the rest: it does, then the panic goes on to
// the caller (the last one, when several panic). A Close thus finishes
// its work, every append reported and the connection closed, before a
// callback's panic reaches its caller.
func forEach[T any](xs []T, f func(T)) {
	i := 0
	defer func() {
		if i < len(xs) { // f(xs[i]) did not return
			forEach(xs[i+1:], f)
		}
	}()
	for ; i < len(xs); i++ {
		f(xs[i])
	}
}
