package equeue_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// The dedup crash test runs this test binary as a child that sends
// messages with IDs (some alone, some three to an append, some of them
// delayed) to a topic with a dedup window on a Badger store whose writes of
// an ID marked "f" fail, and kills it with SIGKILL at a random moment,
// round after round.

const crashDedupTopicName = "dd"

// openCrashDedup opens an engine on a Badger store in dir, through a store
// failing the writes of IDs marked "f" when failing is set.
func openCrashDedup(dir string, failing bool) (*equeue.Engine, error) {
	b, err := store.OpenBadger(dir, nil)
	if err != nil {
		return nil, err
	}
	var s equeue.Store = b
	if failing {
		fs := faultstore.New(b)
		fs.OnWrite(func(b *store.Batch) error {
			if slices.ContainsFunc(b.Entries, func(e store.Entry) bool { return bytes.Contains(e.Value, []byte("#f")) }) {
				return faultstore.ErrInjected
			}
			return nil
		})
		s = fs
	}
	e, err := equeue.Open("", &equeue.Options{Store: s}) // SyncAlways
	if err != nil {
		_ = b.Close()
	}
	return e, err
}

// openCrashDedupPlain opens dir as openCrashDedup does, failing nothing.
func openCrashDedupPlain(dir string) (*equeue.Engine, error) { return openCrashDedup(dir, false) }

// crashDedupDelayed is the sender of the dedup crash child that sends
// delayed messages: its IDs are "r<round>-g4-...".
const crashDedupDelayed = 4

// isCrashDedupDelayed reports whether the dedup crash child sent id delayed.
func isCrashDedupDelayed(id string) bool {
	_, rest, ok := strings.Cut(id, "-")
	return ok && strings.HasPrefix(rest, fmt.Sprintf("g%d-", crashDedupDelayed))
}

// TestCrashDedupChild is the child's workload; it does nothing unless
// started by TestCrash_DedupWindowAgreesWithTheQueuesAfterAKill.
func TestCrashDedupChild(t *testing.T) {
	dir := crashChildDir(t)
	round := crashChildRound()
	ctx := context.Background()
	say := childSay()
	e, err := openCrashDedup(dir, true)
	if err != nil {
		say("ERROR open %v", err)
		os.Exit(3)
	}
	err = e.CreateTopicWith(ctx, crashDedupTopicName, equeue.TopicOptions{Queues: 2, DedupWindow: time.Hour})
	if err != nil && !errors.Is(err, equeue.ErrTopicExists) {
		say("ERROR create %v", err)
		os.Exit(3)
	}
	for g := range 5 {
		go func() {
			for i := 0; ; i++ {
				n := 1 + 2*(i%2) // one message, or three
				ids := make([]string, n)
				ms := make([]*equeue.Message, n)
				var delay time.Duration
				if g == crashDedupDelayed {
					delay = time.Duration(20+rand.IntN(200)) * time.Millisecond
				}
				for k := range ms {
					ids[k] = fmt.Sprintf("r%d-g%d-%d-%d", round, g, i, k)
					if i%10 == 7 {
						ids[k] += "#f" // its write fails
					}
					ms[k] = &equeue.Message{ID: ids[k], Body: []byte(ids[k]), Delay: delay}
				}
				say("SEND %s", strings.Join(ids, " "))
				r, err := e.Append(ctx, &equeue.AppendRequest{Topic: crashDedupTopicName, Queue: (g + i) % 2, Messages: ms})
				switch {
				case err == nil && r.Delayed:
					for _, id := range ids {
						say("DACK %s %d", id, r.Queue)
					}
				case err == nil:
					for k, id := range ids {
						say("ACK %s %d %d", id, r.Queue, r.FirstOffset+int64(k))
					}
				case errors.Is(err, faultstore.ErrInjected) && !errors.Is(err, equeue.ErrIndeterminate):
					for _, id := range ids {
						say("FAIL %s", id)
					}
				default:
					say("ERROR send %v", err)
					return
				}
			}
		}()
	}
	select {}
}

// TestCrash_DedupWindowAgreesWithTheQueuesAfterAKill: after a SIGKILL the
// reopened dedup window knows the ID of every message the queues hold (a
// resend is a duplicate at its position: every acknowledged one where its
// send said) and no other (the IDs of failed writes, and of sends cut by
// the kill that did not reach the store, are stored by a resend). The
// window's time outlives the kill: a message of an earlier round is a
// duplicate in the next. Every acknowledged delayed send is delivered once,
// to the queue its send named, once due after the reopen, and a resend of
// its ID is answered as its send was (a duplicate, Delayed, offset -1), in
// that round and the next.
func TestCrash_DedupWindowAgreesWithTheQueuesAfterAKill(t *testing.T) {
	rng := crashRand(t)
	dir := t.TempDir()
	ctx := ctxT(t)
	acked := map[string]crashPos{}
	delayed := map[string]crashPos{} // where each delayed send stored was delivered
	for round := range 2 {
		going := make(chan struct{}) // some sends acknowledged and some failed
		failed := map[string]bool{}
		sent := map[string]bool{}  // every ID the child sent, answered or not
		dacked := map[string]int{} // acknowledged delayed sends, by queue
		goingOnce, acks := false, 0
		c := startCrashChild(t, crashChildSpec{Test: "TestCrashDedupChild", Dir: dir, Round: round, Line: func(l string) error {
			if !goingOnce && acks >= 20 && len(dacked) >= 6 && len(failed) > 0 {
				goingOnce = true
				close(going)
			}
			f := strings.Fields(l)
			switch {
			case len(f) == 4 && f[0] == "ACK":
				q, _ := strconv.Atoi(f[2])
				off, _ := strconv.ParseInt(f[3], 10, 64)
				acked[f[1]] = crashPos{q, off}
				acks++
			case len(f) == 3 && f[0] == "DACK":
				q, _ := strconv.Atoi(f[2])
				dacked[f[1]] = q
			case len(f) == 2 && f[0] == "FAIL":
				failed[f[1]] = true
			case len(f) > 1 && f[0] == "SEND":
				for _, id := range f[1:] {
					sent[id] = true
				}
			}
			return nil
		}})
		c.await(going, "acknowledged and failed sends")
		c.killAtRandom(rng, 0, 200*time.Millisecond)
		require.NotEmpty(t, failed, "round %d: no write failed", round)

		e := crashReopen(t, dir, round, openCrashDedupPlain)
		eventually(t, waitLong, func() bool {
			info, err := e.Delayed(ctx, 0)
			require.NoError(t, err)
			return info.Pending == 0
		}, "round %d: the delayed messages come due", round)
		// A move stored is visible once the writer published it: a synced
		// write queued after it is published after it.
		err := e.CreateTopic(ctx, "flush", 1)
		if !errors.Is(err, equeue.ErrTopicExists) {
			require.NoError(t, err)
		}
		_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "flush", Messages: []*equeue.Message{{Body: []byte("f")}}})
		require.NoError(t, err)
		found := crashReadTopic(t, ctx, e, crashDedupTopicName)
		for id, pos := range acked {
			require.Equal(t, []crashPos{pos}, found[id], "round %d: acknowledged %s stored once where its send said", round, id)
		}
		for id, pos := range delayed {
			require.Equal(t, []crashPos{pos}, found[id], "round %d: delayed %s of an earlier round stays where it was delivered", round, id)
		}
		for id, q := range dacked {
			require.Len(t, found[id], 1, "round %d: acknowledged delayed %s delivered once", round, id)
			require.Equal(t, q, found[id][0].queue, "round %d: delayed %s delivered to the queue its send named", round, id)
		}
		for id, at := range found {
			if _, ok := acked[id]; !ok && len(at) == 1 && isCrashDedupDelayed(id) {
				delayed[id] = at[0] // acknowledged, or stored by a send the kill cut
			}
		}
		for id := range failed {
			require.Empty(t, found[id], "round %d: %s's write failed", round, id)
		}
		// Resend every ID the queues hold, and those the child sent
		// without a stored message.
		for id := range sent {
			if _, ok := found[id]; !ok {
				found[id] = nil
			}
		}
		dups, stored, never := 0, 0, equeue.SyncNever
		for id, at := range found {
			require.LessOrEqual(t, len(at), 1, "round %d: %s stored %d times", round, id, len(at))
			res, err := e.Append(ctx, &equeue.AppendRequest{Topic: crashDedupTopicName, Sync: &never,
				Messages: []*equeue.Message{{ID: id, Body: []byte(id)}}})
			require.NoError(t, err, "round %d: resend of %s", round, id)
			got := crashPos{res.Queue, res.FirstOffset}
			if _, ok := delayed[id]; ok && len(at) == 1 {
				// Answered as its delayed send was (README, Deduplication).
				require.True(t, res.Duplicate, "round %d: delayed %s is stored at %v, but its ID is not in the window", round, id, at[0])
				require.True(t, res.Delayed, "round %d: delayed %s's duplicate answered as its send was", round, id)
				require.Equal(t, crashPos{at[0].queue, -1}, got, "round %d: delayed %s's duplicate answered elsewhere", round, id)
				dups++
				continue
			}
			if len(at) == 1 {
				require.True(t, res.Duplicate, "round %d: %s is stored at %v, but its ID is not in the window", round, id, at[0])
				require.Equal(t, at[0], got, "round %d: %s's duplicate answered elsewhere", round, id)
				dups++
				continue
			}
			require.False(t, res.Duplicate, "round %d: %s is not stored, but the window answers it at %v", round, id, got)
			acked[id] = got
			found[id] = []crashPos{got}
			stored++
		}
		assert.Equal(t, found, crashReadTopic(t, ctx, e, crashDedupTopicName), "round %d: resends stored nothing twice", round)
		require.NoError(t, e.Close())
		t.Logf("round %d: %d IDs answered as duplicates, %d stored by their resend (%d of failed writes), %d delayed sends acknowledged", round, dups, stored, len(failed), len(dacked))
	}
}
