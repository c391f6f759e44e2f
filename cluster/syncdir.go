package cluster

import (
	"errors"
	"os"
	"syscall"
)

// syncDir makes the entries of directory dir durable: a rename in dir is
// lost by a machine crash until dir itself is synced. A variable so that
// tests can watch, or fail, it.
var syncDir = syncDirectory

// syncDirectory fsyncs directory dir. A platform or file system that
// cannot sync a directory (EINVAL, ENOTSUP) is not an error: there is
// nothing more to do there, as Go's own code treats it.
func syncDirectory(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	return err
}
