package equeue

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/equeue-go/equeue/store"
)

// Redriven marks. A dead letter sent back to its topic (Redrive) is marked
// in the same write, under its group and its offset in the group's
// dead-letter topic, so that it is never redriven twice. Offsets name a
// dead letter only within one incarnation of that topic: one deleted and
// created again starts at offset 0 again, and its dead letters were never
// redriven. So a mark's value names the incarnation it was written for
// (the topic's ID), and a mark answers only for that one. DeleteTopic
// deletes the marks of the incarnation it drops, and a trim of the topic
// (retention, a drop-oldest limit) those of the dead letters it deletes
// (deleteRedrivenBelow); that is tidying, which a failed write may leave
// for the next trim or DeleteGroup.
//
// Marks of the first format (the one byte 1) named no incarnation. Open
// gives each the ID of its group's dead-letter topic, or deletes it when
// the group has none (migrateRedrivenMarks); a store that refuses the
// write (a read-only one) keeps them, and they answer for whichever
// incarnation is there, as they did.
//
// A mark whose value the store cannot read back, or whose value is
// garbled (neither format, nor a kind of a later one), is lost
// (redrivenLost): its key still says that its dead letter was redriven,
// though not into which incarnation, so it answers as a mark of the first
// format does, for whichever incarnation is there, and goes with it. Taken
// as absent, it would let its dead letter be sent back twice. The first
// read that finds it counts it in Stats().CorruptRecords and logs it, with
// its group and offset (noteLostRedriven). Whether it went back is then
// for a person to judge: All and ranges pass it by, and a Redrive naming
// its offset (RedriveRequest.Offsets) sends it back and writes a sound
// mark in the lost one's place (redrivenMarkLost). A mark of a later format's kind is refused with
// ErrUnsupportedFormat, as it was. Since a lost mark cannot tell a gone
// incarnation's from the current one's, the group's marks left from a
// deleted dead-letter topic are deleted before the topic is created again
// (deleteRedrivenLeftovers).

var keyRedrivenPrefix = []byte("dlqr/")

// Kinds of a redriven mark's value (its first byte).
const (
	redrivenNoTopic = 1 // the first format: nothing follows
	redrivenOfTopic = 2 // followed by the dead-letter topic's ID, 4 bytes
)

func redrivenKey(group string, off int64) []byte {
	k := redrivenGroupPrefix(group)
	return binary.BigEndian.AppendUint64(k, uint64(off))
}

// redrivenGroupPrefix is the key prefix of group's redriven marks.
func redrivenGroupPrefix(group string) []byte {
	k := slices.Clone(keyRedrivenPrefix)
	k = append(k, group...)
	return append(k, 0)
}

// redrivenGroup returns the group of a redriven mark's key.
func redrivenGroup(key []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(key, keyRedrivenPrefix)
	if !ok || len(rest) < 9 || rest[len(rest)-9] != 0 {
		return "", false
	}
	return string(rest[:len(rest)-9]), true
}

// redrivenValue is the value of a mark written for dead-letter topic id.
func redrivenValue(id uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{redrivenOfTopic}, id)
}

// redrivenIn reports whether a mark's value marks a dead letter of the
// dead-letter topic whose ID is id: one of that topic, or of the first
// format, or a lost one (v nil when the store cannot read it back), which
// answer for any.
func redrivenIn(v []byte, id uint32) (bool, error) {
	switch {
	case len(v) == 5 && v[0] == redrivenOfTopic:
		return binary.BigEndian.Uint32(v[1:]) == id, nil
	case len(v) > 0 && v[0] > redrivenOfTopic:
		return false, fmt.Errorf("%w: redriven mark of kind %d", ErrUnsupportedFormat, v[0])
	}
	return true, nil
}

// redrivenLost returns why a redriven mark is lost, nil when it is not:
// damaged, when the store cannot read its value back, or its value v is
// garbled.
func redrivenLost(v []byte, damaged error) error {
	switch {
	case damaged != nil:
		return damaged
	case len(v) == 1 && v[0] == redrivenNoTopic, len(v) == 5 && v[0] == redrivenOfTopic, len(v) > 0 && v[0] > redrivenOfTopic:
		return nil
	}
	return fmt.Errorf("%w: redriven mark of %d bytes", ErrCorrupt, len(v))
}

// noteLostRedriven counts (Stats().CorruptRecords) and logs the lost
// redriven mark at key (why says what is wrong with it), unless a read
// found it before. read is e.redrivenRewrites as it was before the read
// that found it: a read older than a redrive's sound mark written over
// the lost one (rewroteRedriven) may have found the lost value, counted
// already, and is not counted again; a later one found the mark lost once
// more, which is counted and logged anew. forgets is e.redrivenForgets as
// it was before that read: when marks were deleted since, the mark is
// read again, and one deleted meanwhile is neither counted nor noted (its
// deletion dropped the note it had, and nothing would drop a new one).
func (e *Engine) noteLostRedriven(key []byte, why error, read, forgets uint64) {
	k := string(key)
	for {
		v, seen := e.lostRedriven.LoadOrStore(k, uint64(0))
		if seen {
			rewrote := v.(uint64)
			if rewrote == 0 || read < rewrote {
				return
			}
			if !e.lostRedriven.CompareAndSwap(k, v, uint64(0)) {
				continue // another read or a redrive came between
			}
		}
		break
	}
	if e.redrivenForgets.Load() != forgets {
		if _, err := e.st.GetMeta(key); errors.Is(err, store.ErrNotFound) {
			e.lostRedriven.CompareAndDelete(k, uint64(0))
			return
		}
	}
	e.stats.corrupt.Add(1)
	group, _ := redrivenGroup(key)
	e.log.Error("redriven mark lost: its dead letter is taken as redriven; only a redrive naming its offset sends it back",
		"group", group, "offset", int64(binary.BigEndian.Uint64(key[len(key)-8:])), "key", fmt.Sprintf("%q", key), "err", why)
}

// rewroteRedriven records that a redrive's write, done, stored a sound
// mark at key: when a read had found a lost one there (noteLostRedriven),
// its entry keeps the number of that write, so that a read from before it
// does not count the loss again, while one after it that finds the mark
// lost once more does. An entry stays for each lost mark written over, as
// few as the redrives that named them, until the mark is deleted
// (forgetLostRedriven). The entry is only swapped, never stored anew: a
// deletion that dropped it since it was read (a trim of the dead letter,
// which the redrive does not hold off) leaves it dropped, and a read or
// rewrite that changed it since gets it read again, so the number kept
// only grows.
func (e *Engine) rewroteRedriven(key []byte) {
	k := string(key)
	for {
		v, ok := e.lostRedriven.Load(k)
		if !ok {
			return
		}
		n := e.redrivenRewrites.Add(1)
		if h := e.redrivenRewriteHook.Load(); h != nil {
			(*h)()
		}
		if e.lostRedriven.CompareAndSwap(k, v, n) {
			return
		}
	}
}

// deleteRedrivenKeys deletes the redriven marks at keys, in writes of at
// most deleteChunk, and drops the notes of the lost ones among them
// (forgetLostRedriven) as each write lands.
func (e *Engine) deleteRedrivenKeys(keys [][]byte) error {
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), deleteChunk)]
		if err := e.deleteKeys(chunk); err != nil {
			return err
		}
		e.forgetLostRedriven(chunk)
		keys = keys[len(chunk):]
	}
	return nil
}

// forgetLostRedriven drops the notes of lost redriven marks
// (noteLostRedriven, rewroteRedriven) of keys, whose marks were deleted:
// the topic or the group they were of is deleted, or a trim dropped their
// dead letters. Keys of other kinds are passed by. Each note would
// otherwise stay for the engine's life.
//
// It counts the deletion (redrivenForgets) before it drops the notes, so
// that a read from before the deletion that notes a mark after the drop
// sees the count moved and finds the mark gone (noteLostRedriven).
func (e *Engine) forgetLostRedriven(keys [][]byte) {
	counted := false
	for _, k := range keys {
		if bytes.HasPrefix(k, keyRedrivenPrefix) {
			if !counted {
				e.redrivenForgets.Add(1)
				counted = true
			}
			e.lostRedriven.Delete(string(k))
		}
	}
}

// redrivenMarkLost reports whether the redriven mark of group's dead
// letter at off is lost (redrivenLost): taken as redriven, though its
// value no longer says so. A Redrive naming off sends such a dead letter
// back all the same, writing a sound mark over the lost one.
func (e *Engine) redrivenMarkLost(group string, off int64) (bool, error) {
	v, err := e.st.GetMeta(redrivenKey(group, off))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case errors.Is(err, store.ErrDamaged):
		return true, nil
	case err != nil:
		return false, err
	}
	return redrivenLost(v, nil) != nil, nil
}

// isRedriven reports whether the dead letter at off of t, group's
// dead-letter topic, was redriven.
func (e *Engine) isRedriven(group string, t *topic, off int64) (bool, error) {
	key := redrivenKey(group, off)
	read, forgets := e.redrivenRewrites.Load(), e.redrivenForgets.Load()
	v, err := e.st.GetMeta(key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case errors.Is(err, store.ErrDamaged):
		v = nil
	case err != nil:
		return false, err
	}
	if why := redrivenLost(v, err); why != nil {
		e.noteLostRedriven(key, why, read, forgets)
	}
	return redrivenIn(v, t.id)
}

// scanRedriven calls fn with the group, the dead letter's offset and the
// value of every redriven mark (nil when the store cannot read it back);
// v is valid only during the call. It notes the lost marks it finds
// (noteLostRedriven).
func (e *Engine) scanRedriven(fn func(group string, off int64, v []byte)) error {
	read, forgets := e.redrivenRewrites.Load(), e.redrivenForgets.Load()
	return e.scanMetaDamaged(keyRedrivenPrefix, func(k, v []byte, damaged error) error {
		if group, ok := redrivenGroup(k); ok {
			if why := redrivenLost(v, damaged); why != nil {
				e.noteLostRedriven(k, why, read, forgets)
			}
			fn(group, int64(binary.BigEndian.Uint64(k[len(k)-8:])), v)
		}
		return nil
	})
}

// migrateRedrivenMarks gives the marks of the first format the ID of their
// group's dead-letter topic, or deletes them when there is none. Open calls
// it once the topics are loaded, before the writer starts.
func (e *Engine) migrateRedrivenMarks() {
	var ops []store.MetaOp
	err := e.scanMetaDamaged(keyRedrivenPrefix, func(k, v []byte, _ error) error {
		if len(v) != 1 || v[0] != redrivenNoTopic {
			return nil
		}
		group, ok := redrivenGroup(k)
		if !ok {
			return nil
		}
		op := store.MetaOp{Key: slices.Clone(k), Delete: true}
		if t, ok := e.topics[DLQTopic(group)]; ok {
			op = store.MetaOp{Key: op.Key, Value: redrivenValue(t.id)}
		}
		ops = append(ops, op)
		return nil
	})
	if err == nil {
		err = e.writeMetaAtOpen(ops)
	}
	if err != nil {
		e.log.Warn("redrive: could not give the redriven marks their topic; the next open tries again", "marks", len(ops), "err", err)
	}
}

// deleteRedrivenMarksOf deletes the redriven marks of t, a dead-letter
// topic just dropped. They no longer answer (their incarnation is gone):
// a failure is logged and leaves them to the group's deletion.
func (e *Engine) deleteRedrivenMarksOf(t *topic) {
	group, ok := cutDLQTopic(t.name)
	if !ok {
		return
	}
	var keys [][]byte
	err := e.scanMetaDamaged(redrivenGroupPrefix(group), func(k, v []byte, _ error) error {
		// A mark of the first format (one Open could not migrate), or a
		// lost one, answers for whichever incarnation is there: this one,
		// which it must not outlive.
		if of, err := redrivenIn(v, t.id); err == nil && of {
			keys = append(keys, slices.Clone(k))
		}
		return nil
	})
	if err == nil {
		err = e.deleteRedrivenKeys(keys)
	}
	if err != nil {
		e.log.Warn("deleting the redriven marks of a deleted dead-letter topic", "topic", t.name, "err", err)
	}
}

// deleteRedrivenLeftovers deletes the redriven marks of the group whose
// dead-letter topic name is, before that topic is created (again): none
// can be of the incarnation to come, so any there is left from one gone
// (DeleteTopic deletes its marks in a write after the topic's, which a
// crash or a failure may skip). Such a mark answers for no later
// incarnation while it names its own, but once lost (redrivenLost) it
// would answer for any, and take a dead letter never redriven for a
// redriven one. adminMu must be held; a failure fails the creation.
func (e *Engine) deleteRedrivenLeftovers(name string) error {
	group, ok := cutDLQTopic(name)
	if !ok {
		return nil
	}
	var keys [][]byte
	err := e.scanMetaDamaged(redrivenGroupPrefix(group), func(k, _ []byte, _ error) error {
		keys = append(keys, slices.Clone(k))
		return nil
	})
	if err == nil && len(keys) > 0 {
		e.log.Info("deleting the redriven marks left from a deleted dead-letter topic", "topic", name, "marks", len(keys))
		err = e.deleteRedrivenKeys(keys)
	}
	if err != nil {
		return fmt.Errorf("deleting the redriven marks left from a deleted dead-letter topic: %w", err)
	}
	return nil
}

// cutDLQTopic returns the group whose dead-letter topic name is.
func cutDLQTopic(name string) (string, bool) {
	return strings.CutPrefix(name, DLQTopicPrefix)
}

// deleteRedrivenBelow deletes the redriven marks of q's dead letters below
// min, its new low watermark, when q is a dead-letter topic's queue:
// retention or the topic's drop-oldest limit deleted those dead letters,
// so their marks answer for nothing, and round after round of redrives
// would otherwise pile them up for good. It must run only once the
// watermark is durable (a crash must not bring back a dead letter whose
// mark is gone), with q.topic.retain.mu held. Marks of another incarnation
// of the topic are left to its deletion or the group's. A failure is
// logged; the next trim starts again from the group's first mark.
func (e *Engine) deleteRedrivenBelow(q *queue, min int64) {
	group, ok := cutDLQTopic(q.topic.name)
	if !ok || q.id != 0 {
		return
	}
	prefix := redrivenGroupPrefix(group)
	var keys [][]byte
	err := e.scanMetaDamaged(prefix, func(k, v []byte, _ error) error {
		if len(k) != len(prefix)+8 {
			return nil
		}
		if int64(binary.BigEndian.Uint64(k[len(prefix):])) >= min {
			return errStopScan // keys are in offset order
		}
		// A mark of the first format, or a lost one, answers for this
		// incarnation too.
		if of, err := redrivenIn(v, q.topic.id); err == nil && of {
			keys = append(keys, slices.Clone(k))
		}
		return nil
	})
	if errors.Is(err, errStopScan) {
		err = nil
	}
	if err == nil {
		err = e.deleteRedrivenKeys(keys)
	}
	if err != nil {
		e.log.Warn("deleting the redriven marks of trimmed dead letters; the next trim tries again", "topic", q.topic.name, "err", err)
	}
}
