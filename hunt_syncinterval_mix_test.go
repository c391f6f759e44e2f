package equeue_test

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// huntSent is what one send was answered: its outcome (outcomeOf) and,
// when acknowledged, where it landed (offset -1 for a delayed one).
type huntSent struct {
	topic   string
	outcome string
	pos     crashPos
	dup     bool
}

// huntSender sends a mix of the least tested shapes to an engine whose
// default policy is not SyncAlways, through a producer of the engine's
// policy and one that overrides it with SyncAlways: plain sends, sends to a
// dedup topic (each ID sent twice in a row, as a retry would), delayed
// sends and sends to a topic capped with drop-oldest, one in five through
// SendAsync. It stops once a send
// is refused (the engine stopped after a failed fsync).
func huntSender(t *testing.T, e *equeue.Engine, g int, record func(id string, s huntSent)) {
	plain, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer plain.Close()
	durable, err := equeue.NewProducer(e, &equeue.ProducerOptions{Sync: &equeue.SyncAlways})
	require.NoError(t, err)
	defer durable.Close()
	for i := 0; i < 2000; i++ {
		p := plain
		if (i/3)%2 == 1 {
			p = durable
		}
		var m *equeue.Message
		switch i % 4 {
		case 0:
			m = &equeue.Message{Topic: "t", ID: fmt.Sprintf("p-%d-%d", g, i)}
		case 1:
			m = &equeue.Message{Topic: "dd", ID: fmt.Sprintf("d-%d-%d", g, i/8)}
		case 2:
			m = &equeue.Message{Topic: "t", ID: fmt.Sprintf("l-%d-%d", g, i), Delay: time.Duration(5+i%40) * time.Millisecond}
		default:
			m = &equeue.Message{Topic: "cap", ID: fmt.Sprintf("c-%d-%d", g, i)}
		}
		m.Body = []byte(m.ID)
		var r equeue.SendResult
		if i%5 == 0 { // the asynchronous path (AppendAsync)
			r, err = p.SendAsync(ctxBG, m).Result(ctxBG)
		} else {
			r, err = p.Send(ctxBG, m)
		}
		s := huntSent{topic: m.Topic, outcome: outcomeOf(t, err)}
		if err == nil {
			s.pos, s.dup = crashPos{r.Queue, r.Offset}, r.Duplicate
		}
		record(m.ID, s)
		if s.outcome == "refused" {
			return
		}
	}
}

// huntRounds is the number of rounds of the mixed-policy hunts:
// EQUEUE_SYNCINTERVAL_HUNT_ROUNDS, or def.
func huntRounds(t *testing.T, def int) int {
	if v := os.Getenv("EQUEUE_SYNCINTERVAL_HUNT_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		return n
	}
	return def
}

// Under SyncInterval (and SyncNever) with SyncAlways sends mixed in, one
// fsync fails at some point: whether the background one or a durable
// send's, both share the store's fsyncs. Every answer given before and
// after it must hold after a reopen: an acknowledged send is stored once
// where it was told (a delayed one once it is due), a refused one is
// never stored, one of unknown outcome at most once, a dedup ID at most
// once, and a retry of each dedup ID after the reopen is answered as the
// first acknowledgement said and stores nothing more.
func TestHuntSyncInterval_FailedSyncAmidMixedPoliciesKeepsEveryAnswer(t *testing.T) {
	for _, policy := range []equeue.SyncPolicy{equeue.SyncInterval(time.Millisecond), equeue.SyncNever} {
		for _, kind := range []string{"memory", "badger"} {
			t.Run(policy.String()+"/"+kind, func(t *testing.T) {
				for round := range huntRounds(t, 2) {
					huntMixedRound(t, kind, policy, int64(4+(round*23)%90))
				}
			})
		}
	}
}

func huntMixedRound(t *testing.T, kind string, policy equeue.SyncPolicy, failAt int64) {
	r := newFaultRig(t, kind, &equeue.Options{Sync: policy})
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 2))
	require.NoError(t, r.E.CreateTopicWith(ctxBG, "dd", equeue.TopicOptions{Queues: 2, DedupWindow: time.Hour}))
	require.NoError(t, r.E.CreateTopicWith(ctxBG, "cap", equeue.TopicOptions{Queues: 2,
		Limits: equeue.TopicLimits{MaxMessages: 6, Overflow: equeue.OverflowDropOldest}}))
	syncs := failNthSync(r, failAt)

	var mu sync.Mutex
	sent := map[string][]huntSent{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			huntSender(t, r.E, g, func(id string, s huntSent) {
				mu.Lock()
				sent[id] = append(sent[id], s)
				mu.Unlock()
			})
		})
	}
	wg.Wait()
	require.Error(t, r.E.StoreFailure(), "the fsync failed (%d fsyncs)", syncs.Load())

	e := r.reopen()
	require.NoError(t, e.StoreFailure())
	// Every acknowledged delayed send is due within 45ms of its send.
	eventually(t, waitLong, func() bool {
		info, err := e.Delayed(ctxBG, 1)
		return err == nil && info.Pending == 0
	}, "every delayed message moved")
	found := map[string][]crashPos{}
	for _, topic := range []string{"t", "dd", "cap"} {
		for id, ps := range crashReadTopic(t, ctxBG, e, topic) {
			found[id] = append(found[id], ps...)
		}
	}
	capCount := 0
	for id, ps := range found {
		if sent[id][0].topic == "cap" {
			capCount += len(ps)
		}
	}
	assert.LessOrEqual(t, capCount, 6, "a drop-oldest topic holds at most its limit after a reopen")

	for id, answers := range sent {
		stored := found[id]
		require.LessOrEqual(t, len(stored), 1, "%s is stored at most once: %v", id, answers)
		var acked *huntSent
		refused := 0
		for i, a := range answers {
			switch a.outcome {
			case "acked":
				if acked == nil {
					acked = &answers[i]
				}
				require.Equal(t, acked.pos, a.pos, "%s: a duplicate is answered where the first send was", id)
			case "refused":
				refused++
			}
		}
		if refused == len(answers) {
			require.Empty(t, stored, "%s was answered not stored", id)
		}
		if acked == nil {
			continue
		}
		switch {
		case acked.topic == "cap":
			// Drop-oldest may have dropped it since; never elsewhere.
			if len(stored) == 1 {
				assert.Equal(t, acked.pos, stored[0], "%s", id)
			}
		case acked.pos.offset < 0:
			require.Len(t, stored, 1, "acknowledged delayed %s is delivered once", id)
		default:
			require.Equal(t, []crashPos{acked.pos}, stored, "acknowledged %s is stored where its send said", id)
		}
	}

	// A retry of every dedup ID after the reopen: a duplicate where the
	// first acknowledgement said, and nothing stored twice.
	p := newProducer(t, e, &equeue.ProducerOptions{Sync: &equeue.SyncAlways})
	for id, answers := range sent {
		if answers[0].topic != "dd" {
			continue
		}
		res, err := p.Send(ctxBG, &equeue.Message{Topic: "dd", ID: id, Body: []byte(id)})
		require.NoError(t, err, "%s", id)
		for _, a := range answers {
			if a.outcome == "acked" {
				require.True(t, res.Duplicate, "%s was acknowledged before the reopen: its retry is a duplicate", id)
				require.Equal(t, a.pos, crashPos{res.Queue, res.Offset}, "%s", id)
			}
		}
		if len(found[id]) == 1 {
			require.True(t, res.Duplicate, "%s is stored: its retry is a duplicate", id)
		}
	}
	for id, ps := range crashReadTopic(t, ctxBG, e, "dd") {
		require.Len(t, ps, 1, "%s is stored once after its retry", id)
	}
	t.Logf("%d IDs sent, %d fsyncs before the reopen", len(sent), syncs.Load())
}
