//go:build equeue_testhold

package main

import (
	"os"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// envTestHoldSync names a file: while it exists, every Sync of the store
// of an engine that openEngine opens on a directory waits, as on a hung
// disk. It is read only by a binary built with the tag equeue_testhold,
// which the tests build to stop serve on a store that does not answer.
const envTestHoldSync = "EQUEUE_TEST_HOLD_SYNC"

func init() {
	hold := os.Getenv(envTestHoldSync)
	if hold == "" {
		return
	}
	wrapEngineStore = func(dir string, bo *store.BadgerOptions) (equeue.Store, error) {
		b, err := store.OpenBadger(dir, bo)
		if err != nil {
			return nil, err
		}
		return &heldSyncStore{Store: b, hold: hold}, nil
	}
}

// heldSyncStore is a store whose Sync waits while the file hold exists;
// a Sync that waits first creates the file hold+".held", so a test knows
// the store is held.
type heldSyncStore struct {
	equeue.Store
	hold string
}

func (s *heldSyncStore) Sync() error {
	for held := false; ; held = true {
		if _, err := os.Stat(s.hold); err != nil {
			return s.Store.Sync()
		}
		if !held {
			_ = os.WriteFile(s.hold+".held", nil, 0o600)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
