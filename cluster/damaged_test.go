package cluster_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// logBuffer collects a node's logs, written from its goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// damagedStores lists the stores a closed node moved aside, by name.
func damagedStores(t *testing.T, dir string) []string {
	t.Helper()
	aside, err := filepath.Glob(filepath.Join(dir, "engine.damaged-[0-9]*"))
	require.NoError(t, err)
	var out []string
	for _, a := range aside {
		digits := strings.TrimPrefix(filepath.Base(a), "engine.damaged-")
		if fi, err := os.Lstat(a); err == nil && fi.IsDir() && strings.Trim(digits, "0123456789") == "" {
			out = append(out, filepath.Base(a))
		}
	}
	return out
}

// damageRounds stops a single node uncleanly, damages its store and opens
// it again, rounds times: each time the node moves its store aside and
// rebuilds it from its Raft log. It returns the names the node moved its
// stores to, oldest first, and the node's logs.
func damageRounds(t *testing.T, keep, rounds int, before func(c *testCluster)) ([]string, *testCluster, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	c := newCluster(t, 1, func(o *cluster.Options) {
		o.KeepDamaged = keep
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	c.createTopic(t, "t", 2)
	sendBodies(t, c, "t", 0, 3000)
	if before != nil {
		before(c)
	}
	var moved []string
	for r := range rounds {
		require.NoError(t, c.nodes[0].CloseUnclean())
		c.nodes[0] = nil
		cutValueLog(t, c.dirs[0])
		require.ErrorIs(t, verifyStore(t, c.dirs[0]), store.ErrDamaged, "round %d", r)
		was := damagedStores(t, c.dirs[0])
		c.start(0, false)
		c.waitLeader()
		c.waitConverged()
		now := damagedStores(t, c.dirs[0])
		var added []string
		for _, a := range now {
			if !slices.Contains(was, a) {
				added = append(added, a)
			}
		}
		require.Len(t, added, 1, "round %d: the damaged store is moved aside", r)
		moved = append(moved, added[0])
	}
	c.closeAll()
	got := readAll(t, c.dirs[0], "t")
	require.Equal(t, 3000, len(got[0])+len(got[1]), "the rebuilt store holds every message")
	return moved, c, logs
}

// A node whose store is found damaged again and again keeps only the
// newest one it moved aside (by default): it removes the older ones, and
// logs each it removed, rather than fill its disk with copies of its
// store. It removes nothing else: not a directory whose name only looks
// like one (no number, a sign, a suffix), not a file or a symbolic link of
// that name, not another node's.
func TestNode_KeepsOnlyTheNewestDamagedStore(t *testing.T) {
	var dir string
	var decoys []string
	outside := filepath.Join(t.TempDir(), "target")
	moved, c, logs := damageRounds(t, 0, 3, func(c *testCluster) {
		dir = c.dirs[0]
		require.NoError(t, os.Mkdir(outside, 0o755))
		for _, name := range []string{"engine.damaged-", "engine.damaged-x", "engine.damaged-+1", "engine.damaged-1.old", "engine.damaged-1x", "raft.damaged-1"} {
			require.NoError(t, os.Mkdir(filepath.Join(dir, name), 0o755))
			decoys = append(decoys, filepath.Join(dir, name))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "engine.damaged-2"), []byte("a file"), 0o644))
		require.NoError(t, os.Symlink(outside, filepath.Join(dir, "engine.damaged-3")))
		other := filepath.Join(filepath.Dir(dir), "engine.damaged-4")
		require.NoError(t, os.Mkdir(other, 0o755))
		decoys = append(decoys, filepath.Join(dir, "engine.damaged-2"), filepath.Join(dir, "engine.damaged-3"), other)
	})
	require.Len(t, moved, 3)
	assert.Equal(t, moved[2:], damagedStores(t, dir), "only the newest damaged store is kept")
	// The kept one is the store that was found damaged.
	o := store.DefaultBadgerOptions()
	o.SegmentBytes = cluster.NodeSegmentBytes
	kept, err := store.OpenBadger(filepath.Join(dir, moved[2]), &o)
	require.NoError(t, err)
	assert.ErrorIs(t, kept.VerifyRecords(), store.ErrDamaged)
	require.NoError(t, kept.Close())
	for _, d := range decoys {
		_, err := os.Lstat(d)
		assert.NoError(t, err, "%s is left alone", d)
	}
	assert.DirExists(t, outside, "a link's target is left alone")
	for _, m := range moved[:2] {
		assert.Contains(t, logs.String(), filepath.Join(dir, m), "the removal of %s is logged", m)
	}
	_ = c
}

// KeepDamaged keeps that many of the newest damaged stores.
func TestNode_KeepDamaged(t *testing.T) {
	moved, c, _ := damageRounds(t, 2, 3, nil)
	require.Len(t, moved, 3)
	assert.ElementsMatch(t, moved[1:], damagedStores(t, c.dirs[0]), "the two newest damaged stores are kept")
}
