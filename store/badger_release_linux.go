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

// mappedResident returns the bytes of file-backed and shared memory of the
// process that are resident (the "shared" field of /proc/self/statm: RssFile
// plus RssShmem), or -1 if it cannot be read.
func mappedResident() int64 {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		return -1
	}
	defer f.Close()
	var buf [128]byte
	n, _ := f.Read(buf[:])
	// "size resident shared text lib data dt", in pages.
	fields := strings.Fields(string(buf[:n]))
	if len(fields) < 3 {
		return -1
	}
	pages, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil {
		return -1
	}
	return pages * int64(os.Getpagesize())
}
