package equeue_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// The SyncInterval crash hunt runs this test binary as a child process
// sending under SyncInterval, with a producer that overrides it with
// SyncAlways, to a plain topic, a dedup topic (each ID sent twice, as a
// retry would), as delayed messages and to a topic capped with
// drop-oldest, and kills it with SIGKILL mid-run. A process crash loses
// nothing the OS was given, so every acknowledgement must hold after the
// reopen, whatever its policy.

// TestHuntSyncIntervalCrashChild is the child's workload; it does nothing
// unless started by TestHuntSyncInterval_KillMidRunKeepsEveryAnswer.
func TestHuntSyncIntervalCrashChild(t *testing.T) {
	dir := crashChildDir(t)
	round := crashChildRound()
	say := childSay()
	e, err := equeue.Open(dir, &equeue.Options{Sync: equeue.SyncInterval(3 * time.Millisecond)})
	if err != nil {
		say("ERROR open %v", err)
		os.Exit(3)
	}
	for name, o := range map[string]equeue.TopicOptions{
		"t":   {Queues: 2},
		"dd":  {Queues: 2, DedupWindow: time.Hour},
		"cap": {Queues: 2, Limits: equeue.TopicLimits{MaxMessages: 20, Overflow: equeue.OverflowDropOldest}},
	} {
		if err := e.CreateTopicWith(ctxBG, name, o); err != nil && !strings.Contains(err.Error(), "exists") {
			say("ERROR create %v", err)
			os.Exit(3)
		}
	}
	plain, _ := equeue.NewProducer(e, nil)
	durable, _ := equeue.NewProducer(e, &equeue.ProducerOptions{Sync: &equeue.SyncAlways})
	say("READY")
	for g := range 4 {
		go func() {
			for i := 0; ; i++ {
				p := plain
				if (i/3)%2 == 1 {
					p = durable
				}
				var m *equeue.Message
				switch i % 4 {
				case 0:
					m = &equeue.Message{Topic: "t", ID: fmt.Sprintf("p%d-%d-%d", round, g, i)}
				case 1:
					m = &equeue.Message{Topic: "dd", ID: fmt.Sprintf("d%d-%d-%d", round, g, i/8)}
				case 2:
					m = &equeue.Message{Topic: "t", ID: fmt.Sprintf("l%d-%d-%d", round, g, i), Delay: time.Duration(10+rand.IntN(300)) * time.Millisecond}
				default:
					m = &equeue.Message{Topic: "cap", ID: fmt.Sprintf("c%d-%d-%d", round, g, i)}
				}
				m.Body = []byte(m.ID)
				say("SENDING %s", m.ID)
				r, err := p.Send(ctxBG, m)
				if err != nil {
					say("ERROR send %s: %v", m.ID, err)
					return
				}
				say("ACK %s %s %d %d", m.ID, m.Topic, r.Queue, r.Offset)
			}
		}()
	}
	select {}
}

type huntAck struct {
	topic string
	pos   crashPos
}

func TestHuntSyncInterval_KillMidRunKeepsEveryAnswer(t *testing.T) {
	rounds := crashRounds(t, 2)
	rng := crashRand(t)
	dir := t.TempDir()
	acked := map[string]huntAck{}
	attempted := map[string]bool{}
	for round := range rounds {
		c := startCrashChild(t, crashChildSpec{Test: "TestHuntSyncIntervalCrashChild", Dir: dir, Round: round, Line: func(l string) error {
			f := strings.Fields(l)
			switch {
			case len(f) == 2 && f[0] == "SENDING":
				attempted[f[1]] = true
			case len(f) == 5 && f[0] == "ACK":
				q, _ := strconv.Atoi(f[3])
				off, _ := strconv.ParseInt(f[4], 10, 64)
				a := huntAck{f[2], crashPos{q, off}}
				if prev, ok := acked[f[1]]; ok && prev != a {
					return fmt.Errorf("%s answered at %v, then at %v", f[1], prev, a)
				}
				acked[f[1]] = a
			}
			return nil
		}})
		c.awaitReady()
		c.killAtRandom(rng, 150*time.Millisecond, 400*time.Millisecond)

		e := crashReopen(t, dir, round, nil)
		eventually(t, waitLong, func() bool {
			info, err := e.Delayed(ctxBG, 1)
			return err == nil && info.Pending == 0
		}, "round %d: every delayed message moved", round)
		require.Zero(t, e.Stats().CorruptRecords, "round %d: nothing lost or damaged: no delay-log entry without its record", round)
		found := map[string][]crashPos{}
		for _, topic := range []string{"t", "dd", "cap"} {
			capped := 0
			for id, ps := range crashReadTopic(t, ctxBG, e, topic) {
				require.True(t, attempted[id], "round %d: %s was never sent", round, id)
				require.Len(t, ps, 1, "round %d: %s is stored once", round, id)
				found[id] = ps
				capped++
			}
			if topic == "cap" {
				require.LessOrEqual(t, capped, 20, "round %d: a drop-oldest topic holds at most its limit after a reopen", round)
			}
		}
		for id, a := range acked {
			switch {
			case a.topic == "cap":
				if ps, ok := found[id]; ok {
					require.Equal(t, []crashPos{a.pos}, ps, "round %d: %s", round, id)
				}
			case a.pos.offset < 0:
				require.Len(t, found[id], 1, "round %d: acknowledged delayed %s is delivered once", round, id)
			default:
				require.Equal(t, []crashPos{a.pos}, found[id], "round %d: acknowledged %s is stored once where its send said", round, id)
			}
		}
		// A retry of every dedup ID the child sent: a duplicate where the
		// acknowledgement said, stored once in all.
		p := newProducer(t, e, nil)
		for id := range attempted {
			if !strings.HasPrefix(id, "d") {
				continue
			}
			res, err := p.Send(ctxBG, &equeue.Message{Topic: "dd", ID: id, Body: []byte(id)})
			require.NoError(t, err)
			if a, ok := acked[id]; ok {
				require.True(t, res.Duplicate, "round %d: acknowledged %s: its retry is a duplicate", round, id)
				require.Equal(t, a.pos, crashPos{res.Queue, res.Offset}, "round %d: %s", round, id)
			}
			if _, ok := found[id]; ok {
				require.True(t, res.Duplicate, "round %d: stored %s: its retry is a duplicate", round, id)
			}
			acked[id] = huntAck{"dd", crashPos{res.Queue, res.Offset}}
		}
		for id, ps := range crashReadTopic(t, ctxBG, e, "dd") {
			require.Len(t, ps, 1, "round %d: %s is stored once after its retry", round, id)
		}
		require.NoError(t, p.Close())
		require.NoError(t, e.Close())
		t.Logf("round %d: %d sends acknowledged, %d attempted", round, len(acked), len(attempted))
	}
	require.NotEmpty(t, acked)
}
