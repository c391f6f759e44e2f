package store

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// Badger creates a memtable log (<fid>.mem) at each memtable rotation and
// a value-log file (<fid>.vlog) when the current one is full, and fsyncs
// neither file's directory entry (it fsyncs the directory for its
// manifest, for the tables its compactions write, and at Close; not for
// the level-0 table a memtable is written out to, a gap left to Badger).
// POSIX does not promise that a new file's
// entry survives a machine crash until its directory is fsynced: the
// writes a Sync acknowledged in that file could go with it. So a Sync
// fsyncs the store's directory once the newest memtable log or value-log
// file it knows of differs from the one at the directory's last fsync:
// once per change, and not at all while no file is created (Open creates
// a memtable: the first Sync after it fsyncs the directory).
//
// The memtable logs are the walSync's own look (rotated, relist). A new
// value-log file can only come with work that wrote to the value log,
// which the Sync after it covers with Badger's Sync (syncLogs): afterSync
// looks for it then, with a stat of the next file, or a listing when the
// newest one seen is gone (a Restore's drop numbers them from 1 again).

const vlogSuffix = ".vlog"

func (w *walSync) vlogPath(fid int) string {
	return filepath.Join(w.dir, fmt.Sprintf("%06d%s", fid, vlogSuffix))
}

// listVlogs returns the fids of the value-log files in dir, ascending. Its
// error is the listing's own: a Sync's look wraps it with
// ErrSyncIncomplete (seeVlog), an Open's names the open (newWALSync).
func (w *walSync) listVlogs() ([]int, error) {
	entries, err := readLogDir(w.dir)
	if err != nil {
		return nil, err
	}
	var fids []int
	for _, e := range entries {
		num, ok := strings.CutSuffix(e.Name(), vlogSuffix)
		if !ok {
			continue
		}
		if fid, err := strconv.Atoi(num); err == nil {
			fids = append(fids, fid)
		}
	}
	slices.Sort(fids)
	return fids, nil
}

// seeVlog updates vlogFid to the newest value-log file. Call it with mu
// held, after Badger's Sync; vlogUnseen stays set until it succeeds, and
// a Sync without Badger's (syncActive) calls it then too.
func (w *walSync) seeVlog() error {
	w.vlogUnseen = true
	next, err := w.existsFile(w.vlogPath(w.vlogFid + 1))
	if err != nil {
		return err
	}
	last := true
	if !next && w.vlogFid > 0 {
		if last, err = w.existsFile(w.vlogPath(w.vlogFid)); err != nil {
			return err
		}
	}
	if next || !last || w.vlogFid == 0 {
		fids, err := w.listVlogs()
		if err != nil {
			return syncIncomplete(err)
		}
		if len(fids) > 0 {
			w.vlogFid = fids[len(fids)-1]
		}
	}
	w.vlogUnseen = false
	return nil
}

// syncDirIfNew fsyncs the directory when a memtable log or value-log file
// was created since its last fsync. Call it with mu held, once every log
// of the Sync is flushed.
func (w *walSync) syncDirIfNew() error {
	if w.vlogUnseen {
		if err := w.seeVlog(); err != nil {
			return err
		}
	}
	if w.fid == w.dirMem && w.vlogFid == w.dirVlog {
		return nil
	}
	if err := w.syncDir(); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	w.dirMem, w.dirVlog = w.fid, w.vlogFid
	return nil
}

// syncDirectory fsyncs dir, which holds Badger's logs. Windows has no
// fsync of a directory (a file's entry is made durable with the file, and
// Badger's own directory sync does nothing there either).
func (w *walSync) syncDirectory() error {
	if runtime.GOOS == "windows" {
		return nil
	}
	return fsyncFile(w.dir)
}
