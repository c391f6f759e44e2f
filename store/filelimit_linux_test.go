package store

import (
	"testing"

	"github.com/equeue-go/equeue/internal/fdlimit"
)

// shutFileLimit lowers the process's open-files limit to its lowest free
// descriptor, so that no file opens until one below it is closed (see
// fdlimit.Shut). Called again, it lowers the limit to a hole a close made
// since. It never raises the limit; the caller gives it back.
func shutFileLimit(t *testing.T) {
	t.Helper()
	fdlimit.Shut(t)
}
