package equeue_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// keptID is an engine-generated ID as a send returned it, and a copy of
// its text in an allocation of its own taken at once.
type keptID struct {
	id, text string
}

// sendGeneratedIDs sends n messages without an ID to topic t, by Send,
// SendAsync and a several-message Append in turn, with bodies of sizes
// around the bound under which the ID's text shares the record's
// allocation, and returns each generated ID by the body it went with.
func sendGeneratedIDs(t *testing.T, ctx context.Context, e *equeue.Engine, round, n int) map[string]keptID {
	t.Helper()
	p := newProducer(t, e, nil)
	kept := make(map[string]keptID, n)
	var mu sync.Mutex
	keep := func(body []byte, id string) {
		mu.Lock()
		defer mu.Unlock()
		kept[string(body)] = keptID{id: id, text: strings.Clone(id)}
	}
	body := func(i int) []byte {
		b := []byte(fmt.Sprintf("r%d-m%d-", round, i))
		return append(b, strings.Repeat("x", (i*7)%300)...)
	}
	var wg sync.WaitGroup
	for i := 0; i < n; {
		switch i % 3 {
		case 0:
			b := body(i)
			res, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: b})
			require.NoError(t, err)
			keep(b, res.ID)
			i++
		case 1:
			b := body(i)
			f := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: b})
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := f.Result(ctx)
				if assert.NoError(t, err) {
					keep(b, res.ID)
				}
			}()
			i++
		default:
			msgs := []*equeue.Message{{Topic: "t", Body: body(i)}, {Topic: "t", Body: body(i + 1)}}
			res, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: i % 2, Messages: msgs})
			require.NoError(t, err)
			require.Len(t, res.IDs, len(msgs))
			for k, m := range msgs {
				keep(m.Body, res.IDs[k])
			}
			i += 2
		}
	}
	wg.Wait()
	return kept
}

// checkGeneratedIDs asserts that every kept ID still reads as it did when
// its send returned, and is the ID its message is stored under.
func checkGeneratedIDs(t *testing.T, ctx context.Context, e *equeue.Engine, kept map[string]keptID, when string) {
	t.Helper()
	runtime.GC()
	for body, k := range kept {
		require.Equal(t, k.text, k.id, "%s: the ID returned for %.12q changed", when, body)
	}
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	stored := map[string]string{}
	for _, q := range info.Queues {
		for next := q.MinOffset; next < q.MaxOffset; {
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: q.ID, Offset: next, Max: 256})
			require.NoError(t, err)
			for _, m := range res.Messages {
				stored[string(m.Body)] = m.ID
			}
			next = res.NextOffset
		}
	}
	for body, k := range kept {
		assert.Equal(t, k.text, stored[body], "%s: the stored ID of %.12q", when, body)
	}
}

// The ID the engine generates for a message sent without one is a string
// that never changes under the application: not when its record is sealed
// and stored, nor after more traffic, nor across a restart, on every kind
// of store; and it is the ID the stored message reads back with.
func TestSend_GeneratedIDsNeverChange(t *testing.T) {
	for _, kind := range []string{"badger on disk", "badger in memory", "memory store"} {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			dir := t.TempDir()
			mem := store.NewMemory()
			t.Cleanup(func() { _ = mem.Close() })
			open := func() *equeue.Engine {
				var o equeue.Options
				switch kind {
				case "badger in memory":
					o.InMemory = true
				case "memory store":
					o.Store = keepOpen{mem}
				}
				d := dir
				if kind != "badger on disk" {
					d = ""
				}
				e, err := equeue.Open(d, &o)
				require.NoError(t, err)
				return e
			}
			e := open()
			require.NoError(t, e.CreateTopic(ctx, "t", 2))
			kept := sendGeneratedIDs(t, ctx, e, 0, 120)
			checkGeneratedIDs(t, ctx, e, kept, "once sent")

			more := sendGeneratedIDs(t, ctx, e, 1, 300)
			checkGeneratedIDs(t, ctx, e, kept, "after more sends")
			for b, k := range more {
				kept[b] = k
			}
			require.NoError(t, e.Close())
			if kind == "badger in memory" {
				for body, k := range kept {
					require.Equal(t, k.text, k.id, "after Close: the ID returned for %.12q changed", body)
				}
				return // nothing to reopen
			}

			e = open()
			defer func() { assert.NoError(t, e.Close()) }()
			checkGeneratedIDs(t, ctx, e, kept, "after a restart")
			sendGeneratedIDs(t, ctx, e, 2, 120)
			checkGeneratedIDs(t, ctx, e, kept, "after sends past the restart")
		})
	}
}
