package equeue_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"pgregory.net/rapid"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// The write-path model drives retention through a group that subscribes to
// every model topic and whose committed offsets the model sets: with
// KeepUnconsumed and an age limit of 1 ns, a pass cuts each queue exactly at
// that group's committed offset, since every record below it was stored
// before the pass began. The model then knows each queue's low watermark.
const retainGroup = "r"

// retainPolicy is the policy of every retention pass of the model.
var retainPolicy = equeue.RetentionPolicy{MaxAge: time.Nanosecond, KeepUnconsumed: true, Interval: -1}

// queueKey names one queue of the model.
func queueKey(topic string, q int) string { return fmt.Sprintf("%s/%d", topic, q) }

// retainModel is what the model knows of retention.
type retainModel struct {
	wm        map[string]int64 // low watermark by queue: offsets below it are gone
	next      map[string]int64 // end of each queue as the last check read it
	committed map[string]int64 // retainGroup's committed offset by queue
	// dirty says a delete may have failed since the last clean sweep, so
	// records below a watermark may still be stored.
	dirty    bool
	topicIDs map[string]uint32
}

// setupRetention creates retainGroup on every model topic with offsets 0
// and learns the topics' store IDs.
func (m *writerModel) setupRetention(rt *rapid.T, e *equeue.Engine, fs *faultstore.FS) {
	ctx := context.Background()
	var subs []equeue.Subscription
	offs := map[equeue.QueueRef]int64{}
	m.ret = retainModel{wm: map[string]int64{}, next: map[string]int64{}, committed: map[string]int64{}, topicIDs: map[string]uint32{}}
	for topic, n := range modelQueues {
		subs = append(subs, equeue.Subscription{Topic: topic, Filter: "*"})
		for q := 0; q < n; q++ {
			offs[equeue.QueueRef{Topic: topic, Queue: q}] = 0
			m.ret.wm[queueKey(topic, q)] = 0
			m.ret.committed[queueKey(topic, q)] = 0
		}
		v, err := fs.GetMeta([]byte("topic/" + topic))
		if err != nil {
			rt.Fatalf("topic metadata of %s: %v", topic, err)
		}
		var meta struct {
			ID uint32 `json:"id"`
		}
		if err := json.Unmarshal(v, &meta); err != nil {
			rt.Fatalf("topic metadata of %s: %v", topic, err)
		}
		m.ret.topicIDs[topic] = meta.ID
	}
	join := &equeue.JoinRequest{Group: retainGroup, Member: "m", Model: equeue.Clustering, Subscriptions: subs}
	if _, err := e.JoinGroup(ctx, join); err != nil {
		rt.Fatalf("join: %v", err)
	}
	if err := e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: retainGroup, Member: "m"}); err != nil {
		rt.Fatalf("leave: %v", err)
	}
	if err := e.ResetOffsets(ctx, retainGroup, equeue.ResetRequest{To: equeue.ResetToOffsets, Offsets: offs}); err != nil {
		rt.Fatalf("reset: %v", err)
	}
}

// committedOffsets reads retainGroup's committed offsets from the engine.
func committedOffsets(rt *rapid.T, e *equeue.Engine) map[string]int64 {
	gi, err := e.Group(context.Background(), retainGroup)
	if err != nil {
		rt.Fatalf("group: %v", err)
	}
	out := map[string]int64{}
	for _, q := range gi.Queues {
		out[queueKey(q.Topic, q.Queue)] = q.Committed
	}
	return out
}

// checkRetention checks what the engine holds against the retention model:
// retainGroup's offsets are the model's and, unless a delete may have
// failed since, nothing is stored below any watermark.
func (m *writerModel) checkRetention(rt *rapid.T, e *equeue.Engine, fs *faultstore.FS) {
	got := committedOffsets(rt, e)
	for k, want := range m.ret.committed {
		if got[k] != want {
			rt.Fatalf("group %q has offset %d on %s, the model %d", retainGroup, got[k], k, want)
		}
	}
	// Memory follows the store: the watermark each queue reports (checked
	// against the model by check) is the stored one.
	for topic, n := range modelQueues {
		for q := 0; q < n; q++ {
			key := binary.BigEndian.AppendUint32([]byte("wm/"), m.ret.topicIDs[topic])
			key = binary.BigEndian.AppendUint32(key, uint32(q))
			var stored int64
			switch v, err := fs.GetMeta(key); {
			case err == nil && len(v) == 8:
				stored = int64(binary.BigEndian.Uint64(v))
			case !errors.Is(err, store.ErrNotFound):
				rt.Fatalf("stored watermark of %s: %x, %v", queueKey(topic, q), v, err)
			}
			if wm := m.ret.wm[queueKey(topic, q)]; stored != wm {
				rt.Fatalf("%s: watermark %d, stored %d", queueKey(topic, q), wm, stored)
			}
		}
	}
	if m.ret.dirty {
		return
	}
	for topic, n := range modelQueues {
		for q := 0; q < n; q++ {
			first, _, ok, err := fs.Bounds(store.QueueID{Topic: m.ret.topicIDs[topic], Queue: uint32(q)})
			if err != nil {
				rt.Fatalf("bounds: %v", err)
			}
			if wm := m.ret.wm[queueKey(topic, q)]; ok && int64(first) < wm {
				rt.Fatalf("%s: records from %d stored below the watermark %d", queueKey(topic, q), first, wm)
			}
		}
	}
}

// passFault is how the store fails during a retention pass.
type passFault int

const (
	passNoFault      passFault = iota
	deletesFailOne             // the next DeleteRange fails and deletes nothing
	deletesCutOne              // the next delete of a model queue removes half its range, then fails
	deletesFailQueue           // the next delete of a model queue fails and deletes nothing
	passWriteFails             // the pass's next store write fails (a watermark is not stored)
	passSyncFails              // the pass's next fsync fails (a watermark is stored, not known durable)
)

// armPass makes the store fail as f says.
func (m *writerModel) armPass(fs *faultstore.FS, f passFault) {
	switch f {
	case deletesFailOne:
		fs.FailDeletes(1)
	case passWriteFails:
		fs.FailWrites(1)
	case passSyncFails:
		fs.FailSyncs(1)
	case deletesCutOne, deletesFailQueue:
		ids := map[uint32]bool{}
		for _, id := range m.ret.topicIDs {
			ids[id] = true
		}
		var once sync.Once
		fs.OnDeleteRange(func(q store.QueueID, from, to uint64) error {
			if !ids[q.Topic] || to <= from {
				return nil
			}
			err := error(nil)
			once.Do(func() {
				if f == deletesCutOne {
					// An interrupted delete: the head of the range is gone.
					_ = fs.Store.DeleteRange(q, from, from+(to-from)/2)
				}
				err = faultstore.ErrInjected
			})
			return err
		})
	}
}

// disarmDeletes lets every range delete pass again.
func disarmDeletes(fs *faultstore.FS) {
	fs.FailDeletes(0)
	fs.OnDeleteRange(nil)
}

// retain moves some of retainGroup's offsets (up to what the last check
// read), runs one retention pass with the store failing as f says, and
// learns each queue's new watermark: exactly the group's offset after a
// pass that returned nil, the old watermark or that offset after a failed
// one.
func (m *writerModel) retain(rt *rapid.T, e *equeue.Engine, fs *faultstore.FS, f passFault) {
	ctx := context.Background()
	offs := map[equeue.QueueRef]int64{}
	for topic, n := range modelQueues {
		for q := 0; q < n; q++ {
			k := queueKey(topic, q)
			if rapid.Bool().Draw(rt, "move") {
				offs[equeue.QueueRef{Topic: topic, Queue: q}] = rapid.Int64Range(m.ret.wm[k], m.ret.next[k]).Draw(rt, "offset")
			}
		}
	}
	if len(offs) > 0 {
		// A reset is one write: applied when it succeeded or only its fsync
		// failed (ErrIndeterminate), not at all when the write failed.
		err := e.ResetOffsets(ctx, retainGroup, equeue.ResetRequest{To: equeue.ResetToOffsets, Offsets: offs})
		if err != nil && !errors.Is(err, faultstore.ErrInjected) {
			rt.Fatalf("reset: %v", err)
		}
		if err == nil || errors.Is(err, equeue.ErrIndeterminate) {
			for ref, off := range offs {
				m.ret.committed[queueKey(ref.Topic, ref.Queue)] = off
			}
		}
		got := committedOffsets(rt, e)
		for k, want := range m.ret.committed {
			if got[k] != want {
				rt.Fatalf("reset (err %v): group has %d on %s, the model %d", err, got[k], k, want)
			}
		}
	}
	m.armPass(fs, f)
	_, err := e.ApplyRetention(ctx, retainPolicy)
	disarmDeletes(fs)
	if err != nil && !errors.Is(err, faultstore.ErrInjected) {
		rt.Fatalf("retention: %v", err)
	}
	m.ret.dirty = m.ret.dirty || err != nil
	if err == nil {
		m.ret.dirty = false // every delete and every earlier sweep succeeded
	}
	for topic, n := range modelQueues {
		ti, terr := e.Topic(ctx, topic)
		if terr != nil {
			rt.Fatalf("topic: %v", terr)
		}
		for q := 0; q < n; q++ {
			k := queueKey(topic, q)
			old, want := m.ret.wm[k], max(m.ret.wm[k], m.ret.committed[k])
			got := ti.Queues[q].MinOffset
			if got != want && (err == nil || got != old) {
				rt.Fatalf("retention (err %v) left %s at watermark %d; was %d, the group is at %d", err, k, got, old, m.ret.committed[k])
			}
			m.ret.wm[k] = got
		}
	}
}
