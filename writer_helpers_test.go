package equeue_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// faultRig is an engine on a fault-injecting store (internal/faultstore): a
// memory store, which reopen keeps (the engine's Close does not clear it),
// or a Badger store that reopen closes and opens again on the same
// directory. The engine is closed when the test ends, and its Close
// must succeed unless a failed fsync was injected.
type faultRig struct {
	t    testing.TB
	kind string
	dir  string
	opts equeue.Options
	mem  *store.Memory // the memory store under FS, for kind "memory"

	mu sync.Mutex
	E  *equeue.Engine
	FS *faultstore.FS
}

func newFaultRig(t testing.TB, kind string, opts *equeue.Options) *faultRig {
	t.Helper()
	r := &faultRig{t: t, kind: kind}
	if opts != nil {
		r.opts = *opts
	}
	if kind == "badger" {
		r.dir = t.TempDir()
	}
	r.open()
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.FS.FailWrites(0)
		r.FS.FailSyncs(0)
		r.FS.OnWrite(nil)
		err := r.E.Close()
		if r.FS.SyncFailures() == 0 { // a store that failed a sync may report it again
			require.NoError(t, err)
		}
	})
	return r
}

func (r *faultRig) open() {
	r.t.Helper()
	var s faultstore.Store
	switch r.kind {
	case "memory":
		if r.mem == nil {
			r.mem = store.NewMemory()
		}
		s = keepOpen{r.mem}
	case "badger":
		b, err := store.OpenBadger(r.dir, nil)
		require.NoError(r.t, err)
		s = b
	default:
		r.t.Fatalf("unknown store kind %q", r.kind)
	}
	r.FS = faultstore.New(s)
	o := r.opts
	o.Store = r.FS
	e, err := equeue.Open("", &o)
	require.NoError(r.t, err)
	r.E = e
}

// reopen closes the engine and opens a new one on the same data.
func (r *faultRig) reopen() *equeue.Engine {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.FS.FailWrites(0)
	r.FS.FailSyncs(0)
	_ = r.E.Close()
	r.open()
	return r.E
}

// queueBodies reads every visible message of one queue and checks that
// their offsets are dense from the queue's low watermark.
func queueBodies(t testing.TB, e *equeue.Engine, topic string, queue int) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	var off int64
	for {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: queue, Offset: off, Max: 1024})
		require.NoError(t, err)
		if off == 0 {
			off = res.MinOffset
		}
		for _, m := range res.Messages {
			require.Equal(t, off, m.Offset, "offsets of %s/%d are dense", topic, queue)
			out = append(out, string(m.Body))
			off++
		}
		if len(res.Messages) == 0 || off >= res.MaxOffset {
			return out
		}
	}
}

// metaKeys counts the store's metadata keys under prefix.
func metaKeys(t testing.TB, s faultstore.Store, prefix string) int {
	t.Helper()
	n := 0
	require.NoError(t, s.ScanMeta([]byte(prefix), func(_, _ []byte) error { n++; return nil }))
	return n
}

func msgs(bodies ...string) []*equeue.Message {
	out := make([]*equeue.Message, len(bodies))
	for i, b := range bodies {
		out[i] = &equeue.Message{Topic: "t", Body: []byte(b)}
	}
	return out
}

const waitLong = 20 * time.Second

var ctxBG = context.Background()

// outcomeOf names what a send's error tells its sender: "acked", "unknown"
// (ErrIndeterminate: kept, outcome unknown) or "refused" (ErrStoreFailed:
// not stored, after a failed fsync stopped the engine). Any other error
// fails the test.
func outcomeOf(t testing.TB, err error) string {
	switch {
	case err == nil:
		return "acked"
	case errors.Is(err, equeue.ErrIndeterminate):
		return "unknown"
	case errors.Is(err, equeue.ErrStoreFailed):
		return "refused"
	}
	t.Errorf("unexpected error: %v", err)
	return "unexpected"
}

// sendOutcomes sends rounds messages from each of senders goroutines to
// t/0 of e, one per Append, and returns each body's outcome (outcomeOf).
func sendOutcomes(t testing.TB, e *equeue.Engine, senders, rounds int) map[string]string {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		outcomes = map[string]string{}
	)
	for g := range senders {
		wg.Go(func() {
			for i := range rounds {
				b := fmt.Sprintf("%d-%d", g, i)
				_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs(b)})
				o := outcomeOf(t, err)
				mu.Lock()
				outcomes[b] = o
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return outcomes
}

// failNthSync makes the nth Sync of r's store (counting from now) fail,
// and returns the count of Syncs.
func failNthSync(r *faultRig, n int64) *atomic.Int64 {
	var syncs atomic.Int64
	r.FS.OnSync(func() error {
		if syncs.Add(1) == n {
			return errors.New("injected fsync failure")
		}
		return nil
	})
	return &syncs
}

// holdWriteOf makes the store hold the first write that carries body until
// the returned release runs (also at the end of the test); inWrite is
// closed once it holds it. Other writes go through.
func holdWriteOf(t *testing.T, r *faultRig, body string) (inWrite <-chan struct{}, release func()) {
	t.Helper()
	return holdWriteWhere(t, r, func(b *store.Batch) bool {
		return slices.ContainsFunc(b.Entries, func(e store.Entry) bool { return bytes.Contains(e.Value, []byte(body)) })
	})
}

// holdWriteWhere makes the store hold the first write match accepts until
// the returned release runs (also at the end of the test); inWrite is
// closed once it holds it. Other writes go through.
func holdWriteWhere(t *testing.T, r *faultRig, match func(*store.Batch) bool) (inWrite <-chan struct{}, release func()) {
	t.Helper()
	in, held := make(chan struct{}), make(chan struct{})
	release = sync.OnceFunc(func() { close(held) })
	t.Cleanup(release)
	var once sync.Once
	r.FS.OnWrite(func(b *store.Batch) error {
		if match(b) {
			once.Do(func() {
				close(in)
				<-held
			})
		}
		return nil
	})
	return in, release
}
