//go:build !unix

package main

// wakeFIFOOpen does nothing where there are no named pipes to open as
// on unix: an open that waits keeps its goroutine until it returns.
func wakeFIFOOpen(string) (woke, again bool) { return false, false }
