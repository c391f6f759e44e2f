//go:build linux

package store_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// mappedTableKiB sums the resident kilobytes of this process's mappings of
// SSTables under dir, from /proc/self/smaps.
func mappedTableKiB(dir string) (int64, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var sum int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if strings.Contains(fields[0], "-") && len(fields) >= 5 { // a mapping's header
			slash := strings.IndexByte(line, '/')
			in = slash >= 0 && strings.HasPrefix(line[slash:], dir+"/") && strings.HasSuffix(line, ".sst")
			continue
		}
		if in && fields[0] == "Rss:" {
			n, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, err
			}
			sum += n
		}
	}
	return sum, sc.Err()
}

// Reading tables faults their pages into the process; with
// ReleaseMappedEvery they are given back, without it they stay.
func TestBadgerReleaseMappedTables(t *testing.T) {
	q := store.QueueID{Topic: 1}
	for _, release := range []time.Duration{0, 10 * time.Millisecond} {
		dir, err := filepath.EvalSymlinks(t.TempDir())
		require.NoError(t, err)
		dir = filepath.Join(dir, "a dir") // a path with a space
		o := store.BadgerOptions{MemTableSize: 1 << 20, ReleaseMappedEvery: release}
		s := openBadger(t, dir, &o)
		fill(t, s, q, 0, 6000, 900) // inline values: about 5.4 MB of tables
		require.NoError(t, s.Close())

		s = openBadger(t, dir, &o)
		require.Len(t, readAll(t, s, q), 6000)
		resident, err := mappedTableKiB(dir)
		require.NoError(t, err)
		if release == 0 {
			require.Greater(t, resident, int64(1024), "read tables stay resident without release")
			continue
		}
		require.Eventually(t, func() bool {
			kib, err := mappedTableKiB(dir)
			return err == nil && kib < 256
		}, 10*time.Second, 10*time.Millisecond, "mapped tables released")
		// Released pages are read back in on demand.
		recs := readAll(t, s, q)
		require.Len(t, recs, 6000)
		requireValues(t, q, 900, recs)
	}
}

// With ReleaseMappedAbove the pages of tables read are given back as soon as
// they add up to that much, long before the interval (an hour here) ends.
func TestBadgerReleaseMappedOnGrowth(t *testing.T) {
	q := store.QueueID{Topic: 1}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	o := store.BadgerOptions{MemTableSize: 1 << 20}
	s := openBadger(t, dir, &o)
	fill(t, s, q, 0, 6000, 900) // inline values: about 5.4 MB of tables
	// Compact now: a compaction of the level-0 tables right after the
	// reopen below would swap the tables read for new ones, whose pages it
	// writes, and the growth the store watches for would not show.
	require.NoError(t, s.Reclaim())
	require.NoError(t, s.Close())

	o.ReleaseMappedEvery = time.Hour
	o.ReleaseMappedAbove = 512 << 10
	s = openBadger(t, dir, &o)
	recs := readAll(t, s, q)
	require.Len(t, recs, 6000)
	requireValues(t, q, 900, recs)
	require.Eventually(t, func() bool {
		kib, err := mappedTableKiB(dir)
		return err == nil && kib < 1024
	}, 10*time.Second, 10*time.Millisecond, "the tables read (about 5 MiB) are released once they pass 512 KiB")

	// Without the threshold the same read stays resident until the hour is up.
	o.ReleaseMappedAbove = 0
	require.NoError(t, s.Close())
	s = openBadger(t, dir, &o)
	require.Len(t, readAll(t, s, q), 6000)
	kib, err := mappedTableKiB(dir)
	require.NoError(t, err)
	require.Greater(t, kib, int64(1024), "read tables stay resident without the threshold")
}
