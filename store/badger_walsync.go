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

// walRescan bounds how long a rotation the quick check misses can go
// unflushed.
const walRescan = time.Second

// walSync tracks the memtable logs a Sync must flush besides Badger's own.
type walSync struct {
	mu   sync.Mutex
	dir  string
	fid  int       // the newest memtable log at the last look (0: none)
	scan time.Time // the last listing of dir
	// syncFile flushes one file; tests replace it to see the calls.
	syncFile func(path string) error
}

const memSuffix = ".mem"

// newWALSync returns the tracker for the Badger directory dir, starting
// from the newest memtable log there.
func newWALSync(dir string) (*walSync, error) {
	w := &walSync{dir: dir, syncFile: fsyncFile}
	fids, err := w.list()
	if err != nil {
		return nil, err
	}
	if len(fids) > 0 {
		w.fid = fids[len(fids)-1]
	}
	w.scan = time.Now()
	return w, nil
}

// list returns the fids of the memtable logs in dir, ascending.
func (w *walSync) list() ([]int, error) {
	entries, err := os.ReadDir(w.dir)
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
	_, err := os.Stat(w.path(fid))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
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
// call. Call it after Badger's Sync: when no rotation shows, it costs one
// or two stats.
func (w *walSync) afterSync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	rotated, err := w.rotated()
	if err != nil {
		return err
	}
	now := time.Now()
	if !rotated && now.Sub(w.scan) < walRescan {
		return nil
	}
	w.scan = now
	fids, err := w.list()
	if err != nil || len(fids) == 0 {
		return err
	}
	newest := fids[len(fids)-1]
	// Every log from the last look's newest on, but the newest now, was
	// active since the last look and is set aside; the newest's was synced
	// by Badger's Sync unless it was created after that started, in which
	// case it holds only later writes, and the next call looks at it.
	for _, fid := range fids {
		if fid < w.fid || fid >= newest {
			continue
		}
		if err := w.syncFile(w.path(fid)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sync memtable log %d: %w", fid, err)
		}
	}
	w.fid = max(w.fid, newest)
	return nil
}

// fsyncFile flushes the file at path to stable storage; the writes Badger
// made through its memory mapping are in the same page cache.
func fsyncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
