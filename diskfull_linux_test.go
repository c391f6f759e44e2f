//go:build linux

package equeue_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// TestDiskFull_SendsRefusedNotCrashed fills a real, small file system (a
// tmpfs mounted for the test: Linux, as root) with an engine in a child
// process. Without the store's free-space check the child dies of SIGBUS
// once Badger writes a memory-mapped page the disk has no block for; with
// it, the send that would fill the disk fails with ErrNoSpace, the
// process lives on, metadata writes still go in, and a second process
// reopens the full disk, finds every acknowledged message stored once,
// deletes the topic and sends again.
func TestDiskFull_SendsRefusedNotCrashed(t *testing.T) {
	disk := mountSmallDisk(t, 48<<20)
	dir := filepath.Join(disk, "data")

	fill := diskFullChild(t, dir, "fill")
	acked := map[string]bool{}
	var refused string
	for _, l := range fill {
		f := strings.Fields(l)
		switch {
		case len(f) == 2 && f[0] == "ACK":
			acked[f[1]] = true
		case len(f) >= 2 && f[0] == "REFUSED":
			refused = l
		}
	}
	require.NotEmpty(t, acked)
	require.Contains(t, refused, "REFUSED true", "the send that fills the disk fails with ErrNoSpace")
	require.Contains(t, fill, "META ok", "a metadata write still goes in")
	require.Contains(t, fill, "CLOSED ok")

	check := diskFullChild(t, dir, "check")
	found := map[string]int{}
	for _, l := range check {
		if id, ok := strings.CutPrefix(l, "FOUND "); ok {
			found[id]++
		}
	}
	for id := range acked {
		require.Equal(t, 1, found[id], "acknowledged %s stored once", id)
	}
	assert.Contains(t, check, "DELETED ok")
	assert.Contains(t, check, "AFTER ok", "sends go in again once space is freed: %v", check[max(len(check)-3, 0):])
	assert.Contains(t, check, "CLOSED ok")

	// Another program fills the disk to the last few blocks: opening for
	// writes is refused (Badger's open writes log headers through memory
	// maps, which would raise SIGBUS).
	fillDisk(t, disk, 8<<10)
	var opened string
	for _, l := range diskFullChild(t, dir, "open") {
		if strings.HasPrefix(l, "OPEN ") {
			opened = l
		}
	}
	require.Contains(t, opened, "OPEN true", "open on a full disk fails with ErrNoSpace")
	t.Logf("%d acknowledged before the disk filled; %s; %s", len(acked), refused, opened)
}

// diskFullChild runs TestDiskFullChild in step and returns its output
// lines; the child must exit cleanly.
func diskFullChild(t *testing.T, dir, step string) []string {
	t.Helper()
	var lines []string
	c := startCrashChild(t, crashChildSpec{Test: "TestDiskFullChild", Dir: dir, Env: []string{"EQUEUE_DISKFULL_STEP=" + step},
		Line: func(l string) error { lines = append(lines, l); return nil }})
	c.exit()
	return lines
}

// diskFullOptions keep Badger's memtables small, so the reserve the store
// keeps free (3 x 2 MiB + 4 MiB) is a fraction of the small disk.
func diskFullOptions() *equeue.Options {
	return &equeue.Options{Badger: &store.BadgerOptions{MemTableSize: 2 << 20}}
}

// TestDiskFullChild is the child of TestDiskFull_SendsRefusedNotCrashed.
func TestDiskFullChild(t *testing.T) {
	dir := crashChildDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	say := childSay()
	status := func(err error) string {
		if err != nil {
			return err.Error()
		}
		return "ok"
	}
	e, err := equeue.Open(dir, diskFullOptions())
	if os.Getenv("EQUEUE_DISKFULL_STEP") == "open" {
		say("OPEN %t %v", errors.Is(err, equeue.ErrNoSpace), err)
		if err == nil {
			require.NoError(t, e.Close())
		}
		return
	}
	require.NoError(t, err)
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	body := bytes.Repeat([]byte("x"), 1024)
	switch os.Getenv("EQUEUE_DISKFULL_STEP") {
	case "fill":
		require.NoError(t, e.CreateTopic(ctx, "t", 2))
		for i := 0; ; i++ {
			msgs := make([]*equeue.Message, 20)
			for j := range msgs {
				msgs[j] = &equeue.Message{Topic: "t", ID: fmt.Sprintf("m-%d-%d", i, j), Body: body}
			}
			if _, err := p.SendBatch(ctx, msgs); err != nil {
				say("REFUSED %t %v", errors.Is(err, equeue.ErrNoSpace), err)
				break
			}
			for _, m := range msgs {
				say("ACK %s", m.ID)
			}
		}
		say("META %s", status(e.CreateTopic(ctx, "small", 1)))
	case "check":
		for id, at := range crashReadTopic(t, ctx, e, "t") {
			for range at {
				say("FOUND %s", id)
			}
		}
		say("DELETED %s", status(e.DeleteTopic(ctx, "t")))
		// The next retention pass gives the deleted topic's space back.
		var after error
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if _, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{}); err != nil {
				say("RETENTION %v", err)
			}
			if _, after = p.Send(ctx, &equeue.Message{Topic: "small", Body: body}); after == nil {
				break
			}
		}
		say("AFTER %s", status(after))
	}
	require.NoError(t, p.Close())
	say("CLOSED %s", status(e.Close()))
}

// fillDisk writes a file into disk until about left bytes stay free.
func fillDisk(t *testing.T, disk string, left int64) {
	t.Helper()
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(disk, &st))
	free := int64(st.Bavail) * int64(st.Bsize)
	require.Greater(t, free, left)
	require.NoError(t, os.WriteFile(filepath.Join(disk, "filler"), make([]byte, free-left), 0o600))
}

// mountSmallDisk mounts a tmpfs of size bytes for the test and returns its
// path. It needs root; without it the test is skipped, but not under CI,
// which runs as root.
func mountSmallDisk(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root on Linux: this test needs to mount a tmpfs")
		}
		t.Skip("needs Linux and root to mount a small tmpfs")
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mount a tmpfs: %v: %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}
