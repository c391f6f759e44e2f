package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Badger's Sync flushes the write-ahead log of the active memtable and the
// value log, but not the logs of memtables it has just set aside as full
// (immutable) and not yet written out as a table. A write that went into
// such a memtable, followed by the rotation to a new one and then Sync,
// would be acknowledged as durable while its bytes are only in the page
// cache until the flush to a table completes: a machine crash in between
// loses it. So after Badger's Sync the store flushes the logs of the
// memtables set aside since its last look. A log already gone was written
// out as a synced table first.
//
// Badger names the logs <fid>.mem, with a new, higher fid for each
// memtable, and deletes a log once its memtable is a table and no reader
// holds it, so the logs present need not be consecutive. Listing the
// directory finds them for sure but costs in proportion to its files, so
// it runs only when a rotation shows (the log after the last active one
// exists, or the last active one is gone) and otherwise at most once per
// walRescan, which also catches a rotation hidden by a deleted log.

// A Sync after writes that put nothing in the value log does without
// Badger's Sync: it flushes the active memtable's log itself, with the
// logs set aside (syncActive), and saves the value log's fsync.

// walRescan bounds how long a rotation the quick check misses can go
// unflushed.
const walRescan = time.Second

// walSync tracks the memtable logs a Sync must flush besides Badger's own.
type walSync struct {
	mu   sync.Mutex
	dir  string
	fid  int       // the newest memtable log at the last look (0: none)
	scan time.Time // the last listing of dir
	// flush flushes the log of memtable fid (flushLog); tests replace it
	// to see the calls.
	flush func(fid int) error
	// listLogs lists the memtable logs in dir (list); tests replace it to
	// see what each listing found.
	listLogs func() ([]int, error)
	// file is the open log of memtable fileFid, the newest one flushed,
	// kept for the next flush of the active log (syncActive).
	file    *os.File
	fileFid int

	// written bounds the bytes the store's writes added to memtables
	// since the last listing, and stale is set when something else may
	// have rotated the memtable (a flush, a value-log GC round, a
	// restore): see syncActive.
	written atomic.Int64
	stale   atomic.Bool
	// busy counts uncounted work running (beginUncounted): while any
	// does, every Sync lists the directory, as the work can rotate the
	// memtable unseen after a listing cleared stale.
	busy atomic.Int32
	// relistAt is the written count from which syncActive lists the
	// directory: a quarter of a memtable.
	relistAt int64

	// The directory's own fsync (badger_dirsync.go): vlogFid is the
	// newest value-log file seen, vlogUnseen is set while a value-log
	// file Badger may have created is not looked for yet, dirMem and
	// dirVlog are fid and vlogFid at the last fsync of dir (-1: none
	// since open), and syncDir fsyncs dir (tests replace it to count the
	// calls).
	vlogFid         int
	vlogUnseen      bool
	dirMem, dirVlog int
	syncDir         func() error
}

const memSuffix = ".mem"

// newWALSync returns the tracker for the Badger directory dir, whose
// memtables hold memTableSize bytes, starting from the newest memtable log
// there.
func newWALSync(dir string, memTableSize int64) (*walSync, error) {
	w := &walSync{dir: dir, relistAt: max(memTableSize/4, 1), dirMem: -1, dirVlog: -1}
	w.flush, w.listLogs, w.syncDir = w.flushLog, w.list, w.syncDirectory
	fids, err := w.list()
	if err != nil {
		return nil, err
	}
	if len(fids) > 0 {
		w.fid = fids[len(fids)-1]
	}
	vlogs, err := w.listVlogs()
	if err != nil {
		return nil, err
	}
	if len(vlogs) > 0 {
		w.vlogFid = vlogs[len(vlogs)-1]
	}
	w.scan = time.Now()
	return w, nil
}

// readLogDir lists the directory holding Badger's logs for the walSync's
// look-ups (its listings of the memtable logs and value-log files); tests
// replace it to make a listing fail.
var readLogDir = os.ReadDir

// list returns the fids of the memtable logs in dir, ascending.
func (w *walSync) list() ([]int, error) {
	entries, err := readLogDir(w.dir)
	if err != nil {
		return nil, err
	}
	var fids []int
	for _, e := range entries {
		if fid, ok := memFid(e.Name()); ok {
			fids = append(fids, fid)
		}
	}
	slices.Sort(fids)
	return fids, nil
}

func memFid(name string) (int, bool) {
	num, ok := strings.CutSuffix(name, memSuffix)
	if !ok {
		return 0, false
	}
	fid, err := strconv.Atoi(num)
	return fid, err == nil
}

func (w *walSync) path(fid int) string {
	return filepath.Join(w.dir, fmt.Sprintf("%05d%s", fid, memSuffix))
}

func (w *walSync) exists(fid int) (bool, error) {
	return w.existsFile(w.path(fid))
}

func (w *walSync) existsFile(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, syncIncomplete(err)
}

// rotated reports whether the quick check shows a memtable created since
// the last look.
func (w *walSync) rotated() (bool, error) {
	next, err := w.exists(w.fid + 1)
	if err != nil || next || w.fid == 0 {
		return next, err
	}
	last, err := w.exists(w.fid)
	return !last, err
}

// afterSync flushes the logs of the memtables set aside since the last
// call. Call it after Badger's Sync, which flushed the active one: when no
// rotation shows, it costs one or two stats.
func (w *walSync) afterSync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.vlogUnseen = true // the value log may have a new file (badger_dirsync.go)
	rotated, err := w.rotated()
	if err != nil {
		return err
	}
	if rotated || w.listDue() {
		// Every log from the last look's newest on, but the newest now,
		// was active since the last look and is set aside; the newest's
		// was synced by Badger's Sync unless it was created after that
		// started, in which case it holds only later writes, and the
		// next call looks at it.
		if err := w.relist(false); err != nil {
			return err
		}
	}
	return w.syncDirIfNew()
}

// syncActive does a Sync's work without Badger's: it flushes the log of
// the active memtable and those set aside since the last look, not the
// value log. The store calls it when no write since the last Sync may have
// put a value in the value log; a write's records and metadata are then
// all in the memtable's log. Badger's Sync would also flush the value
// log's file, which costs an fsync of its own (about a fifth of a Sync of
// a small write on ext4) even when nothing was written to it.
//
// Which log is active: the memtable logs are numbered in the order Badger
// creates them, and the active one is always the newest. The last look
// found fid newest; if no later log exists now and fid still does, fid is
// still active, unless a later log came and went, which takes two
// rotations: the second one's memtable must be filled and written out as
// a table. The store counts what its writes add to the memtables
// (wrote), and lists the directory once that reaches a quarter of a
// memtable, or once something else may have written to them (touch).
func (w *walSync) syncActive() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	rotated, err := w.rotated()
	if err != nil {
		return err
	}
	if !rotated && !w.listDue() {
		err := w.flush(w.fid)
		if !errors.Is(err, fs.ErrNotExist) {
			if err != nil {
				return fmt.Errorf("sync memtable log %d: %w", w.fid, err)
			}
			return w.syncDirIfNew()
		}
		// Written out as a table since the check: a rotation.
	}
	if err := w.relist(true); err != nil {
		return err
	}
	return w.syncDirIfNew()
}

// errNoActiveLog is syncActive finding no memtable log at all, which
// Badger on disk always has; the store then does Badger's Sync.
var errNoActiveLog = errors.New("store: no memtable log found")

// listDue reports whether the quick check may have missed a rotation.
func (w *walSync) listDue() bool {
	return w.stale.Load() || w.busy.Load() > 0 || w.written.Load() >= w.relistAt || time.Since(w.scan) >= walRescan
}

// relist lists the directory and flushes every log from the last look's
// newest on: all but the newest now, or all with it when withNewest. When
// it fails, the next Sync lists the directory again.
func (w *walSync) relist(withNewest bool) (err error) {
	w.stale.Store(false)
	w.written.Store(0)
	w.scan = time.Now()
	defer func() {
		if err != nil {
			w.stale.Store(true)
		}
	}()
	fids, err := w.listLogs()
	if err != nil {
		return syncIncomplete(err)
	}
	if len(fids) == 0 {
		if withNewest {
			return errNoActiveLog
		}
		return nil
	}
	newest := fids[len(fids)-1]
	for _, fid := range fids {
		if fid < w.fid || (fid == newest && !withNewest) {
			continue
		}
		if err := w.flush(fid); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sync memtable log %d: %w", fid, err)
		}
	}
	w.fid = max(w.fid, newest)
	return nil
}

// wrote counts n bytes a write adds to the memtables (syncActive).
func (w *walSync) wrote(n int64) { w.written.Add(n) }

// touch makes the next Sync list the directory: something other than a
// counted write may have rotated the memtable.
func (w *walSync) touch() { w.stale.Store(true) }

// flushLog flushes the log of memtable fid. The log of the newest one
// flushed so far stays open for the next call. Call with mu held.
func (w *walSync) flushLog(fid int) error {
	if w.file != nil && w.fileFid == fid {
		return w.file.Sync()
	}
	if fid < w.fid {
		return fsyncFile(w.path(fid))
	}
	f, err := os.Open(w.path(fid))
	if err != nil {
		return syncIncomplete(err)
	}
	if w.file != nil {
		_ = w.file.Close() // opened read-only: nothing to lose
	}
	w.file, w.fileFid = f, fid
	return f.Sync()
}

// close closes the log kept open.
func (w *walSync) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file != nil {
		_ = w.file.Close()
		w.file = nil
	}
}

// fsyncFile flushes the file at path to stable storage; the writes Badger
// made through its memory mapping are in the same page cache.
func fsyncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return syncIncomplete(err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
