package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Size returns the bytes the store occupies. On disk that is what the files
// in the directory (LSM tables, value log, write-ahead memtables, manifest)
// take, counted as allocated blocks where the platform says, since Badger
// preallocates its log files sparsely; unlike badger.DB.Size, which is
// refreshed once a minute, it is current. In memory it is the size of the
// LSM tables; memtables not yet flushed are not counted.
func (s *Badger) Size() (int64, error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.release()
	if s.inMemory {
		var n int64
		for _, t := range s.db.Tables() {
			n += int64(t.OnDiskSize)
		}
		return n, nil
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, fmt.Errorf("store: size of %q: %w", s.dir, err)
	}
	var n int64
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed by compaction or GC meanwhile
		}
		if err != nil {
			return 0, fmt.Errorf("store: size of %q: %w", filepath.Join(s.dir, e.Name()), err)
		}
		n += diskUsage(fi)
	}
	return n, nil
}
