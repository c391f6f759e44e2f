// Package fdlimit lowers the process's open-files limit (RLIMIT_NOFILE)
// in tests, so that a file open fails with EMFILE where a test needs it
// to (a Badger memtable rotation, a restore, a value-log GC round).
//
// The limit bounds descriptor numbers, not how many are open, and a new
// file takes the lowest free number: a limit set to the count of open
// descriptors leaves free every hole below the highest one (files closed
// earlier, by Badger's flushes and compactions among others). The
// functions here count free descriptors below the limit instead. Linux
// only: elsewhere the package is empty.
package fdlimit
