package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Badger's Sync flushes the write-ahead log of the active memtable and the
// value log, but not the logs of memtables it has just set aside as full
// (immutable) and not yet written out as a table. A write that went into
// such a memtable, followed by the rotation to a new one and then Sync,
// would be acknowledged as durable while its bytes are only in the page
// cache until the flush to a table completes: a machine crash in between
// loses it. So after Badger's Sync the store looks for memtables created
// since the last look (Badger names them <fid>.mem with rising fids) and
// flushes the logs of the ones that are no longer active. A log already
// gone was written out as a synced table first.

// walSync tracks the memtable logs a Sync must flush besides Badger's own.
type walSync struct {
	mu  sync.Mutex
	dir string
	fid int // the active memtable's fid at the last look (0: none known)
	// syncFile flushes one file; tests replace it to see the calls.
	syncFile func(path string) error
}

const memSuffix = ".mem"

// newWALSync returns the tracker for the Badger directory dir, starting
// from the newest memtable log there.
func newWALSync(dir string) (*walSync, error) {
	w := &walSync{dir: dir, syncFile: fsyncFile}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if fid, ok := memFid(e.Name()); ok && fid > w.fid {
			w.fid = fid
		}
	}
	return w, nil
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

// afterSync flushes the logs of the memtables that became immutable since
// the last call. Call it after Badger's Sync: when no memtable was created
// since, it costs one stat.
func (w *walSync) afterSync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	newest := w.fid
	for {
		ok, err := w.exists(newest + 1)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		newest++
	}
	if newest == w.fid {
		return nil
	}
	// w.fid .. newest-1 were active at some point since the last look and
	// are set aside now; newest's log was synced by Badger's Sync unless it
	// was created after that started, in which case it holds only later
	// writes. The next call starts from it.
	for fid := max(w.fid, 1); fid < newest; fid++ {
		if err := w.syncFile(w.path(fid)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sync memtable log %d: %w", fid, err)
		}
	}
	w.fid = newest
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
