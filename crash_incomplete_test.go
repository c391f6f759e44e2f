package equeue_test

import (
	"fmt"
	"os"
	"sync/atomic"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// crashIncompleteEnv, set for every other round of TestCrash_KillAndReopen,
// makes the child's store fail every other Sync with
// store.ErrSyncIncomplete, without syncing anything: the engine retries
// such a Sync, and a send it then answers stored must survive the kill as
// any other.
const crashIncompleteEnv = "EQUEUE_CRASH_INCOMPLETE_SYNCS"

// openCrashChild opens the crash child's engine on dir: on its Badger
// store, wrapped to fail Syncs as crashIncompleteEnv says.
func openCrashChild(dir string) (*equeue.Engine, error) {
	if os.Getenv(crashIncompleteEnv) == "" {
		return equeue.Open(dir, nil)
	}
	b, err := store.OpenBadger(dir, nil)
	if err != nil {
		return nil, err
	}
	fs := faultstore.New(b)
	var syncs atomic.Int64
	fs.OnSync(func() error {
		if syncs.Add(1)%2 == 1 {
			return fmt.Errorf("%w: injected: too many open files", store.ErrSyncIncomplete)
		}
		return nil
	})
	return equeue.Open("", &equeue.Options{Store: fs})
}
