package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// keepOpen is a memory store that survives the engine's Close, so a test
// can reopen an engine on what the last one stored.
type keepOpen struct{ *store.Memory }

func (keepOpen) Close() error { return nil }

// modelMsg is what the model knows of one message body.
type modelMsg struct {
	topic   string
	queue   int
	offset  int64 // -1 until known: a delayed or indeterminate message is learned where it is first read
	maybe   bool  // the send's outcome was indeterminate: present at most once
	delayed bool
}

type writerModel struct {
	msgs  map[string]*modelMsg // by body; bodies are unique
	ids   map[string]string    // dedup topic: message ID -> body stored for it
	bodyN int
	// dead letters of group "g" by body (true: acknowledged, false: maybe);
	// a redriven one's body is in msgs once its mark was seen.
	dlq map[string]bool
	ret retainModel
}

var modelQueues = map[string]int{"p": 2, "d": 1}

// modelRead returns the bodies of one queue by offset from its low
// watermark from, checking that the queue's watermark is from and that
// offsets are dense.
func modelRead(e *equeue.Engine, topic string, q int, from int64) ([]string, error) {
	var out []string
	for off := from; ; {
		res, err := e.Pull(context.Background(), &equeue.PullRequest{Topic: topic, Queue: q, Offset: off, Max: 1024})
		if err != nil {
			return nil, err
		}
		if res.MinOffset != from || res.Status == equeue.PullOffsetMoved {
			return nil, fmt.Errorf("%s/%d: watermark %d (status %v), the model has %d", topic, q, res.MinOffset, res.Status, from)
		}
		for _, m := range res.Messages {
			if m.Offset != off {
				return nil, fmt.Errorf("%s/%d: offset %d where %d was expected", topic, q, m.Offset, off)
			}
			out = append(out, string(m.Body))
			off++
		}
		if len(res.Messages) == 0 {
			return out, nil
		}
	}
}

// check compares what the engine holds with the model: each queue starts at
// the model's watermark; every message the model knows the offset of is
// there exactly once, unless retention removed it (its offset is below the
// watermark); a message whose offset the model does not know yet (delayed,
// or indeterminate) appears at most once and is known by its offset from
// then on. final also requires every acknowledged delayed message to have
// arrived.
func (m *writerModel) check(rt *rapid.T, e *equeue.Engine, fs *faultstore.FS, final bool) {
	seen := map[string]int{}
	all := map[string][]string{}
	for topic, n := range modelQueues {
		for q := 0; q < n; q++ {
			k := queueKey(topic, q)
			wm := m.ret.wm[k]
			bodies, err := modelRead(e, topic, q, wm)
			if err != nil {
				rt.Fatalf("read: %v", err)
			}
			all[k] = bodies
			m.ret.next[k] = wm + int64(len(bodies))
			for i, b := range bodies {
				off := wm + int64(i)
				mm, ok := m.msgs[b]
				if !ok {
					rt.Fatalf("%s@%d holds %q, which the model says was not stored", k, off, b)
				}
				if mm.topic != topic || (mm.offset >= 0 && (mm.queue != q || mm.offset != off)) {
					rt.Fatalf("%q at %s@%d, model has %+v", b, k, off, *mm)
				}
				seen[b]++
			}
		}
	}
	for b, mm := range m.msgs {
		n := seen[b]
		gone := mm.offset >= 0 && mm.offset < m.ret.wm[queueKey(mm.topic, mm.queue)]
		switch {
		case n > 1:
			rt.Fatalf("%q (%+v) is stored %d times: %v", b, *mm, n, all)
		case n == 0 && mm.offset >= 0 && !gone:
			rt.Fatalf("%q (%+v), stored at or above the watermark, is missing", b, *mm)
		case n == 0 && mm.offset < 0 && !mm.maybe && (!mm.delayed || final):
			rt.Fatalf("acknowledged %q (%+v) is missing", b, *mm)
		}
	}
	// Learn where the messages of unknown offset are, after the whole read
	// (a message read twice must not be learned at its second place).
	for topic, n := range modelQueues {
		for q := 0; q < n; q++ {
			k := queueKey(topic, q)
			for i, b := range all[k] {
				if mm := m.msgs[b]; mm.offset < 0 {
					mm.queue, mm.offset = q, m.ret.wm[k]+int64(i)
				}
			}
		}
	}
	m.checkRetention(rt, e, fs)
}

// send appends count messages and records the outcome in the model.
func (m *writerModel) send(rt *rapid.T, e *equeue.Engine, topic string, q, count int, delayed bool, id string) {
	req := &equeue.AppendRequest{Topic: topic, Queue: q}
	var bodies []string
	for i := 0; i < count; i++ {
		m.bodyN++
		b := fmt.Sprintf("m%d", m.bodyN)
		bodies = append(bodies, b)
		msg := &equeue.Message{Body: []byte(b), ID: id}
		if delayed {
			msg.Delay = time.Millisecond
		}
		req.Messages = append(req.Messages, msg)
	}
	prev, known := m.ids[id]
	known = known && id != ""
	res, err := e.Append(context.Background(), req)
	switch {
	case err == nil && known:
		if !res.Duplicate {
			rt.Fatalf("send of known ID %q (body %q) was not a duplicate", id, prev)
		}
		if p := m.msgs[prev]; !p.delayed && !p.maybe && res.FirstOffset != p.offset {
			rt.Fatalf("duplicate of %q answered offset %d, stored at %d", id, res.FirstOffset, p.offset)
		}
	case err == nil:
		if res.Duplicate {
			rt.Fatalf("send of new ID %q answered as a duplicate", id)
		}
		for i, b := range bodies {
			mm := &modelMsg{topic: topic, queue: q, offset: -1, delayed: delayed}
			if !delayed {
				mm.queue, mm.offset = res.Queue, res.FirstOffset+int64(i)
			}
			m.msgs[b] = mm
		}
		if id != "" {
			m.ids[id] = bodies[0]
		}
	case errors.Is(err, equeue.ErrIndeterminate):
		if known {
			return // a duplicate stores nothing
		}
		for _, b := range bodies {
			m.msgs[b] = &modelMsg{topic: topic, queue: q, offset: -1, maybe: true, delayed: delayed}
		}
		if id != "" {
			m.ids[id] = bodies[0]
		}
	case errors.Is(err, faultstore.ErrInjected):
		// Not stored: the model does not learn the bodies.
	default:
		rt.Fatalf("send: %v", err)
	}
}

// deadLetter stores a dead letter of group "g" whose origin is p/q.
func (m *writerModel) deadLetter(rt *rapid.T, e *equeue.Engine, q int) {
	m.bodyN++
	b := fmt.Sprintf("m%d", m.bodyN)
	msg := &equeue.Message{Body: []byte(b)}
	msg.SetSysProperties(map[string]string{equeue.SysOriginTopic: "p", equeue.SysOriginQueue: fmt.Sprint(q), equeue.SysOriginOffset: "0"})
	_, err := equeue.AppendInternal(context.Background(), e, &equeue.AppendRequest{Topic: equeue.DLQTopic("g"), Messages: []*equeue.Message{msg}})
	switch {
	case err == nil:
		m.dlq[b] = true
	case errors.Is(err, equeue.ErrIndeterminate):
		m.dlq[b] = false
	case errors.Is(err, faultstore.ErrInjected):
	default:
		rt.Fatalf("dead letter: %v", err)
	}
}

// redrive redrives every dead letter back to its topic (group "g" never
// joined, so it has no retry topic to redrive into) and learns which ones
// are marked: a mark and its copy are one write, so a marked dead letter's
// body is in its topic (at most once while its outcome is unknown).
func (m *writerModel) redrive(rt *rapid.T, e *equeue.Engine) {
	_, err := e.Redrive(context.Background(), "g", equeue.RedriveRequest{All: true, ToTopic: true})
	if err != nil && !errors.Is(err, faultstore.ErrInjected) && !errors.Is(err, equeue.ErrTopicNotFound) {
		rt.Fatalf("redrive: %v", err)
	}
	m.learnRedriven(rt, e, err != nil, false)
}

// learnRedriven adds the copies of marked dead letters to the model; maybe
// says the last redrive failed, reopened that the engine was just reopened
// (everything stored is visible, so a marked copy must be there).
func (m *writerModel) learnRedriven(rt *rapid.T, e *equeue.Engine, maybe, reopened bool) {
	var from int64
	ti, err := e.Topic(context.Background(), equeue.DLQTopic("g"))
	switch {
	case err == nil:
		from = ti.Queues[0].MinOffset // retention may have removed the first ones
	case !errors.Is(err, equeue.ErrTopicNotFound):
		rt.Fatalf("dead letter topic: %v", err)
	}
	dls, err := e.DeadLetters(context.Background(), "g", from, 1024)
	if err != nil {
		rt.Fatalf("dead letters: %v", err)
	}
	for _, dl := range dls {
		b := string(dl.Message.Body)
		if _, ok := m.dlq[b]; !ok {
			rt.Fatalf("dead letter %q was not stored", b)
		}
		switch {
		case !dl.Redriven:
		case m.msgs[b] == nil:
			m.msgs[b] = &modelMsg{topic: "p", queue: dl.Message.Queue, offset: -1, maybe: maybe}
		case reopened:
			m.msgs[b].maybe = false
		}
	}
}

// TestWriter_ModelWithFailures drives random sends (plain, batch, delayed,
// dedup), dead letters and redrives, retention passes, injected Write, Sync
// and DeleteRange failures (also of the sweep on open) and reopens against
// a model, and checks after every step and after a final reopen: every
// acknowledged message exactly once at its offset unless retention removed
// it (offsets below the queue's modelled watermark are gone, from the store
// too once a sweep succeeded; the rest is dense and exact), nothing stored
// that the model says is not, indeterminate sends at most once. It runs on
// the memory store; EQUEUE_MODEL_BADGER=1 runs it on Badger as well (closed
// and opened again on every reopen). Run more cases with -rapid.checks.
func TestWriter_ModelWithFailures(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			mem := store.NewMemory()
			defer mem.Close()
			runWriterModel(rt, func() faultstore.Store { return keepOpen{mem} })
		})
	})
	t.Run("badger", func(t *testing.T) {
		if os.Getenv("EQUEUE_MODEL_BADGER") == "" {
			t.Skip("set EQUEUE_MODEL_BADGER=1 to run the model on Badger")
		}
		root := t.TempDir()
		rapid.Check(t, func(rt *rapid.T) {
			dir, err := os.MkdirTemp(root, "model")
			if err != nil {
				rt.Fatal(err)
			}
			defer os.RemoveAll(dir)
			runWriterModel(rt, func() faultstore.Store {
				s, err := store.OpenBadger(dir, nil)
				if err != nil {
					rt.Fatalf("open badger: %v", err)
				}
				return s
			})
		})
	})
}

// runWriterModel runs one case of TestWriter_ModelWithFailures on the
// stores newStore opens: one per engine, which the engine closes, so a
// store that keeps its data across Close is reopened on the same data.
func runWriterModel(rt *rapid.T, newStore func() faultstore.Store) {
	var (
		fs *faultstore.FS
		e  *equeue.Engine
	)
	m := &writerModel{msgs: map[string]*modelMsg{}, ids: map[string]string{}, dlq: map[string]bool{}}
	// open opens an engine; failSweep makes the first range delete of a
	// model queue during the open (its sweep below the watermarks) fail.
	open := func(failSweep bool) {
		fs = faultstore.New(newStore())
		if failSweep {
			m.armPass(fs, deletesFailQueue)
		}
		var err error
		if e, err = equeue.Open("", &equeue.Options{Store: fs, Retention: equeue.RetentionPolicy{Interval: -1}}); err != nil {
			e = nil
			rt.Fatalf("open (failing sweep %v): %v", failSweep, err)
		}
		disarmDeletes(fs)
		if !failSweep {
			m.ret.dirty = false // open swept below every watermark
		}
	}
	reopen := func(failSweep bool) {
		fs.FailWrites(0)
		fs.FailSyncs(0)
		_ = e.Close() // may repeat an injected sync failure
		open(failSweep)
	}
	open(false)
	defer func() {
		if e != nil {
			_ = e.Close()
		}
	}()
	ctx := context.Background()
	if err := e.CreateTopic(ctx, "p", modelQueues["p"]); err != nil {
		rt.Fatal(err)
	}
	if err := e.CreateTopicWith(ctx, "d", equeue.TopicOptions{Queues: modelQueues["d"], DedupWindow: time.Hour}); err != nil {
		rt.Fatal(err)
	}
	m.setupRetention(rt, e, fs)
	m.check(rt, e, fs, false)
	steps := rapid.IntRange(1, 30).Draw(rt, "steps")
	for i := 0; i < steps; i++ {
		switch rapid.IntRange(0, 10).Draw(rt, "op") {
		case 0, 1:
			m.send(rt, e, "p", rapid.IntRange(0, 1).Draw(rt, "queue"), rapid.IntRange(1, 3).Draw(rt, "count"),
				rapid.Bool().Draw(rt, "delayed"), "")
		case 2, 3:
			m.send(rt, e, "d", 0, 1, rapid.Bool().Draw(rt, "delayed"), rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(rt, "id"))
		case 4:
			fs.FailWrites(1)
		case 5:
			fs.FailSyncs(1)
		case 6:
			reopen(rapid.Bool().Draw(rt, "failSweep"))
		case 7:
			m.deadLetter(rt, e, rapid.IntRange(0, 1).Draw(rt, "queue"))
		case 8:
			m.redrive(rt, e)
		case 9, 10:
			f := passFault(rapid.IntRange(int(passNoFault), int(passSyncFails)).Draw(rt, "fault"))
			m.retain(rt, e, fs, f)
		}
		m.check(rt, e, fs, false)
	}
	fs.FailWrites(0)
	fs.FailSyncs(0)
	if e.StoreFailure() != nil {
		reopen(false) // a failed fsync stopped the engine's writes: moves too
	}
	deadline := time.Now().Add(waitLong)
	for {
		n := 0
		_ = fs.ScanMeta([]byte("d/"), func(_, _ []byte) error { n++; return nil })
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			rt.Fatalf("%d delayed messages never moved", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A move is published after its write returned: the reopen below
	// makes everything stored visible before the final check.
	reopen(false)
	m.check(rt, e, fs, true)
	// Every dead letter marked redriven has its copy, also after a reopen.
	m.learnRedriven(rt, e, false, true)
	m.check(rt, e, fs, true)
}
