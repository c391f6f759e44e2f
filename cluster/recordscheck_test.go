package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// rotMarker ends the body of the message rottingLog damages; rotDamaged is
// what it reads back as.
var (
	rotMarker  = []byte("rot-me-A")
	rotDamaged = []byte("rot-me-B")
)

// rottingLog reads every Raft entry holding rotMarker back with the
// marker's last byte changed: bytes of the Raft log damaged on the disk
// (raft-wal and bbolt do not check an entry against a checksum when they
// read it back) or on the way between nodes. Only the record's own
// checksum, which the leader's engine computed, can tell; each node's
// Badger computes its segments' checksums over the bytes it was given.
type rottingLog struct{ raft.LogStore }

func (r rottingLog) GetLog(index uint64, out *raft.Log) error {
	if err := r.LogStore.GetLog(index, out); err != nil {
		return err
	}
	if i := bytes.Index(out.Data, rotMarker); i >= 0 {
		d := bytes.Clone(out.Data) // the cache's copy stays as stored
		copy(d[i:], rotDamaged)
		out.Data = d
	}
	return nil
}

// A record damaged between the leader's engine and a node's store (here:
// in the followers' Raft log reads, which the leader's sends to them and
// their FSMs apply) is reported corrupt by the next leader, as a record
// damaged in the store is, and never delivered: a node's Badger packs what
// the Raft entry holds into a segment whose checksum covers the damage, so
// the node's reads cannot skip the records' own checksums.
func TestCluster_RecordDamagedInTheRaftLogIsReportedCorrupt(t *testing.T) {
	c := newCluster(t, 3, func(o *cluster.Options) {
		cluster.SetLogStoreHook(o, func(s raft.LogStore) raft.LogStore { return rottingLog{s} })
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.createTopic(t, "t", 1)
	body := append([]byte("a body that ends in "), rotMarker...)
	c.sendBatch(t, "t", 0, [][]byte{body})
	c.waitConverged()

	c.stop(c.leaderIndex()) // a follower, which applied the damaged entry, leads next
	var res equeue.PullResult
	eventually(t, 30*time.Second, func() error {
		var err error
		res, err = c.waitLeader().Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
		if errors.Is(err, equeue.ErrNotLeader) {
			return err
		}
		require.NoError(t, err)
		if len(res.Messages)+len(res.Corrupt) == 0 {
			return fmt.Errorf("nothing read yet: %+v", res)
		}
		return nil
	})
	for _, m := range res.Messages {
		assert.NotEqual(t, string(append([]byte("a body that ends in "), rotDamaged...)), string(m.Body), "a damaged record was delivered")
	}
	assert.Empty(t, res.Messages)
	assert.Equal(t, []int64{0}, res.Corrupt, "the damaged record is reported corrupt")
}
