package equeue_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// faultyEngine is an engine on a store wrapped by faultstore.
type faultyEngine struct {
	t    testing.TB
	kind string
	dir  string
	opts equeue.Options

	mu sync.Mutex
	e  *equeue.Engine
	fs *faultstore.FS
}

// openFaultyEngine opens an engine of the given kind ("badger" or "memory")
// on a faultstore wrapper and closes it when the test ends.
func openFaultyEngine(t testing.TB, kind string, opts *equeue.Options) *faultyEngine {
	t.Helper()
	f := &faultyEngine{t: t, kind: kind}
	if opts != nil {
		f.opts = *opts
	}
	if kind == "badger" {
		f.dir = t.TempDir()
	}
	f.open()
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.e != nil {
			require.NoError(t, f.e.Close())
		}
	})
	return f
}

func (f *faultyEngine) open() {
	f.t.Helper()
	var inner faultstore.Store
	switch f.kind {
	case "memory":
		inner = store.NewMemory()
	case "badger":
		bo := store.DefaultBadgerOptions()
		b, err := store.OpenBadger(f.dir, &bo)
		require.NoError(f.t, err)
		inner = b
	default:
		f.t.Fatalf("unknown store kind %q", f.kind)
	}
	fs := faultstore.New(inner)
	o := f.opts
	o.Store = fs
	e, err := equeue.Open("", &o)
	require.NoError(f.t, err)
	f.mu.Lock()
	f.e, f.fs = e, fs
	f.mu.Unlock()
}

// reopen closes the engine and opens a new one on the same data (badger only).
func (f *faultyEngine) reopen() *equeue.Engine {
	f.t.Helper()
	require.Equal(f.t, "badger", f.kind, "only a durable store can be reopened")
	f.mu.Lock()
	require.NoError(f.t, f.e.Close())
	f.e = nil
	f.mu.Unlock()
	f.open()
	return f.e
}
