package fdlimit_test

import (
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/fdlimit"
)

// openFiles opens n files, closed in a cleanup.
func openFiles(t *testing.T, n int) []*os.File {
	t.Helper()
	files := make([]*os.File, 0, n)
	for range n {
		f, err := os.Open(os.DevNull)
		require.NoError(t, err)
		files = append(files, f)
		t.Cleanup(func() { _ = f.Close() })
	}
	return files
}

// opens opens files until one fails, closes them, and returns how many
// opened and the error of the one that failed.
func opens(t *testing.T, most int) (int, error) {
	t.Helper()
	var files []*os.File
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	for len(files) < most {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return len(files), err
		}
		files = append(files, f)
	}
	return len(files), nil
}

// Shut leaves no descriptor to open, a hole below the highest open one
// included, and none after a close made another hole.
func TestShut_LeavesNoDescriptorFree(t *testing.T) {
	restore := fdlimit.Save(t)
	files := openFiles(t, 3)
	require.NoError(t, files[0].Close()) // a hole below the highest descriptor
	fdlimit.Shut(t)
	n, err := opens(t, 1)
	require.ErrorIs(t, err, syscall.EMFILE, "a file opened in a hole")
	require.Zero(t, n)

	require.NoError(t, files[1].Close()) // as a compaction closes a table
	fdlimit.Shut(t)
	n, err = opens(t, 1)
	require.ErrorIs(t, err, syscall.EMFILE, "a file opened in a hole made after the first shut")
	require.Zero(t, n)

	restore()
	n, err = opens(t, 1)
	require.NoError(t, err, "the limit is given back")
	require.Equal(t, 1, n)
}

// Leave leaves exactly room descriptors to open, holes among descriptors
// still open included (the lowest free one plus room would leave fewer).
func TestLeave_LeavesExactlyRoomAmongHoles(t *testing.T) {
	restore := fdlimit.Save(t)
	defer restore()
	files := openFiles(t, 6)
	// Holes at the first, third and fifth: the lowest free descriptor
	// plus two would leave two holes below the limit only if the second
	// one were free.
	for _, i := range []int{0, 2, 4} {
		require.NoError(t, files[i].Close())
	}
	for _, room := range []int{3, 2, 1, 0} {
		fdlimit.Leave(t, room)
		n, err := opens(t, room+1)
		require.ErrorIs(t, err, syscall.EMFILE, "room %d", room)
		require.Equal(t, room, n, "room %d", room)
	}
}

// fillHoles opens files (closed in a cleanup) until every descriptor
// below the highest open one is taken.
func fillHoles(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	highest := 0
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		require.NoError(t, err)
		highest = max(highest, fd)
	}
	for {
		f := openFiles(t, 1)[0]
		if int(f.Fd()) >= highest {
			return
		}
	}
}

// A negative room leaves no descriptor, and -room closes of descriptors
// below the lowest free one still none: only the next one opens a file.
func TestLeave_NegativeRoomNeedsThatManyClosesAndOne(t *testing.T) {
	restore := fdlimit.Save(t)
	defer restore()
	fillHoles(t)
	files := openFiles(t, 3) // the highest descriptors, the lowest free one after them
	fdlimit.Leave(t, -2)
	n, err := opens(t, 1)
	require.ErrorIs(t, err, syscall.EMFILE)
	require.Zero(t, n)
	require.NoError(t, files[2].Close()) // at the limit's old place: above it now
	require.NoError(t, files[1].Close()) // the limit's own number: still not below it
	n, err = opens(t, 1)
	require.ErrorIs(t, err, syscall.EMFILE, "a descriptor at or above the limit was used")
	require.Zero(t, n)
	require.NoError(t, files[0].Close())
	n, err = opens(t, 2)
	require.ErrorIs(t, err, syscall.EMFILE)
	require.Equal(t, 1, n, "the close below the limit frees one")
}

// Leave never raises the limit, though it is called from several
// goroutines at once (each one's probes take descriptors the others would
// find free): after every call returns, none is free.
func TestShut_ConcurrentCallsLeaveNoneFree(t *testing.T) {
	restore := fdlimit.Save(t)
	defer restore()
	files := openFiles(t, 8)
	for i := 0; i < len(files); i += 2 {
		require.NoError(t, files[i].Close())
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { fdlimit.Shut(t) })
	}
	wg.Wait()
	n, err := opens(t, 1)
	require.ErrorIs(t, err, syscall.EMFILE)
	require.Zero(t, n)
}

// With exactly room descriptors free below the limit, Leave keeps the
// limit: the last probe's descriptor is free too.
func TestLeave_RoomAlreadyExact(t *testing.T) {
	restore := fdlimit.Save(t)
	defer restore()
	fdlimit.Leave(t, 2)
	fdlimit.Leave(t, 2)
	n, err := opens(t, 3)
	require.ErrorIs(t, err, syscall.EMFILE)
	require.Equal(t, 2, n)
}
