//go:build unix

package main

import "syscall"

// openNoWait makes openRegular's open return at once on a named pipe
// put in the place of a regular file after its check, rather than wait
// for a writer; it changes nothing for a regular file.
const openNoWait = syscall.O_NONBLOCK
