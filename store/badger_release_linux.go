//go:build linux

package store

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// madvPageout is Linux's MADV_PAGEOUT (since 5.4): reclaim the pages of the
// range now. Unlike MADV_DONTNEED it never discards data: a page still in
// use is read back in, a range that has been unmapped or mapped anew since
// the list was read is only paged out, and older kernels answer EINVAL.
const madvPageout = 21

// releaseMapped pages out every memory mapping of a Badger table (.sst) or
// value-log file (.vlog) under dir, as listed in /proc/self/maps. Memtable
// logs (.mem) stay: the active one is written all the time. Errors are
// ignored: releasing is an optimization.
func releaseMapped(dir string) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "start-end perms offset dev inode path": the path is all from
		// the first slash (it may hold spaces), the rest has none.
		line := sc.Text()
		slash := strings.IndexByte(line, '/')
		if slash < 0 {
			continue
		}
		path := strings.TrimSuffix(line[slash:], " (deleted)")
		if !strings.HasPrefix(path, dir) || !(strings.HasSuffix(path, ".sst") || strings.HasSuffix(path, ".vlog")) {
			continue
		}
		from, to, ok := strings.Cut(strings.Fields(line)[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(from, 16, 64)
		end, err2 := strconv.ParseUint(to, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), madvPageout)
	}
}
