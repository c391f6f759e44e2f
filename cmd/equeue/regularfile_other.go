//go:build !unix

package main

// openNoWait is nothing where there are no named pipes to open as on
// unix.
const openNoWait = 0
