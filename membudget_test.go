package equeue_test

import (
	"fmt"
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

func TestMemoryBudget_BadValuesRefused(t *testing.T) {
	for _, o := range []equeue.Options{
		{MemoryBudget: -1},
		{MemoryBudget: 1},
		{MemoryBudget: equeue.MinMemoryBudget - 1},
	} {
		require.ErrorIs(t, o.Validate(), equeue.ErrInvalidOptions, "%d", o.MemoryBudget)
		_, err := equeue.Open(t.TempDir(), &o)
		require.ErrorIs(t, err, equeue.ErrInvalidOptions, "%d", o.MemoryBudget)
		require.ErrorContains(t, err, "16 MiB")
	}
	// The budget sizes the Badger store: with another store it means nothing.
	o := equeue.Options{InMemory: true, MemoryBudget: 64 << 20}
	_, err := equeue.Open("", &o)
	require.ErrorIs(t, err, equeue.ErrInvalidOptions)
	require.NoError(t, (&equeue.Options{MemoryBudget: equeue.MinMemoryBudget}).Validate())
}

// A budget too large for any host is refused as a bad option, naming the
// field, before anything is opened: Badger sizes its block cache from it
// and allocates the cache's admission sketch at open, which for such a
// budget panicked inside Badger (reported as an opaque open error, with
// goroutines of the half-opened store left running) or, a little lower,
// asked the runtime for more memory than the host has.
func TestMemoryBudget_HugeValuesRefused(t *testing.T) {
	for _, b := range []int64{math.MaxInt64, 1 << 62} {
		o := equeue.Options{MemoryBudget: b}
		require.ErrorIs(t, o.Validate(), equeue.ErrInvalidOptions, "%d", b)
		_, err := equeue.Open(t.TempDir(), &o)
		require.ErrorIs(t, err, equeue.ErrInvalidOptions, "%d", b)
		require.ErrorContains(t, err, "MemoryBudget")
	}
	require.ErrorIs(t, (&equeue.Options{MemoryBudget: equeue.MaxMemoryBudget + 1}).Validate(), equeue.ErrInvalidOptions)
	require.NoError(t, (&equeue.Options{MemoryBudget: equeue.MaxMemoryBudget}).Validate())
}

// An engine sized by the smallest budget stores, reads back and reopens a
// backlog larger than its memtables.
func TestMemoryBudget_EngineEndToEnd(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	opts := &equeue.Options{MemoryBudget: equeue.MinMemoryBudget}
	e, err := equeue.Open(dir, opts)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	const n = 20000 // 100-byte bodies: about 3 MB, three 1 MiB memtables
	body := make([]byte, 100)
	for i := 0; i < n; i += 500 { // the floor takes ~790 per batch
		msgs := make([]*equeue.Message, 0, 500)
		for j := range 500 {
			msgs = append(msgs, &equeue.Message{Topic: "t", Body: fmt.Appendf(body[:0:0], "%0100d", i+j)})
		}
		_, err := p.SendBatch(ctx, msgs)
		require.NoError(t, err)
	}
	require.NoError(t, p.Close())
	check := func(e *equeue.Engine) {
		t.Helper()
		var next int64
		for next < n {
			r, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: next, Max: equeue.MaxPullBatch})
			require.NoError(t, err)
			require.NotEmpty(t, r.Messages, "offset %d", next)
			for _, m := range r.Messages {
				require.Equal(t, fmt.Sprintf("%0100d", m.Offset), string(m.Body))
			}
			next = r.NextOffset
		}
		require.Equal(t, int64(n), next)
	}
	check(e)
	require.NoError(t, e.Close())

	e, err = equeue.Open(dir, opts)
	require.NoError(t, err)
	check(e)
	require.NoError(t, e.Close())
}

// A budget sets a soft Go memory limit while the engine is open, if the
// host has none, and removes it on Close; the store's GoMemoryLimit opts
// out, and a bad one is refused with store.ErrInvalidOptions.
func TestMemoryBudget_GoMemoryLimitWhileOpen(t *testing.T) {
	was := debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "")
	t.Cleanup(func() { debug.SetMemoryLimit(was) })
	const budget = 48 << 20

	e, err := equeue.Open(t.TempDir(), &equeue.Options{MemoryBudget: budget})
	require.NoError(t, err)
	limit := debug.SetMemoryLimit(-1)
	require.Greater(t, limit, int64(budget+budget/4), "what the process uses plus 5/4 of the budget")
	require.Less(t, limit, int64(math.MaxInt64))
	require.NoError(t, e.Close())
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "Close removes it")

	e, err = equeue.Open(t.TempDir(), &equeue.Options{MemoryBudget: budget,
		Badger: &store.BadgerOptions{GoMemoryLimit: -1}})
	require.NoError(t, err)
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "opted out")
	require.NoError(t, e.Close())

	_, err = equeue.Open(t.TempDir(), &equeue.Options{MemoryBudget: budget,
		Badger: &store.BadgerOptions{GoMemoryLimit: 1 << 20}})
	require.ErrorIs(t, err, store.ErrInvalidOptions)
}
