package store_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// store, Badger's background workers included, must be gone once closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
