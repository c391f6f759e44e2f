package cluster_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// huntOutcome is what a send was told.
type huntOutcome int

const (
	huntStored huntOutcome = iota
	huntNotStored
	huntUnknown
)

// classify says what err tells the caller of a send: stored (nil), not
// stored (refused: not the leader, the engine or node closed before it
// took the write) or unknown (equeue.ErrIndeterminate). Anything else is
// an error the caller cannot classify, and fails the test.
func classify(t *testing.T, what string, err error) huntOutcome {
	t.Helper()
	switch {
	case err == nil:
		return huntStored
	case errors.Is(err, equeue.ErrIndeterminate):
		return huntUnknown
	case errors.Is(err, equeue.ErrNotLeader), errors.Is(err, equeue.ErrClosed):
		return huntNotStored
	}
	t.Errorf("%s: an error the caller cannot classify: %v", what, err)
	return huntUnknown
}

// checkOutcomes checks that every message told stored is stored exactly
// once and none told not stored is stored at all.
func checkOutcomes(t *testing.T, outcomes map[string]huntOutcome, stored map[int][]string, where string) {
	t.Helper()
	count := map[string]int{}
	for _, bodies := range stored {
		for _, b := range bodies {
			count[b]++
		}
	}
	for v, o := range outcomes {
		switch o {
		case huntStored:
			assert.Equal(t, 1, count[v], "%s: %s was acknowledged: stored once", where, v)
		case huntNotStored:
			assert.Zero(t, count[v], "%s: %s was refused: never stored", where, v)
		case huntUnknown:
			assert.LessOrEqual(t, count[v], 1, "%s: %s of unknown outcome stored at most once", where, v)
		}
	}
	for v, k := range count {
		_, sent := outcomes[v]
		assert.True(t, sent, "%s: %s stored %d times, never sent", where, v, k)
	}
}

// huntPullAll reads every message of queue q of topic on the serving leader.
func huntPullAll(t *testing.T, c *testCluster, topic string, q int) []*equeue.Message {
	t.Helper()
	var out []*equeue.Message
	c.onServing(t, "read "+topic, func(n *cluster.Node) error {
		out = nil
		for off := int64(0); ; {
			res, err := n.Pull(context.Background(), &equeue.PullRequest{Topic: topic, Queue: q, Offset: off, Max: equeue.MaxPullBatch})
			if err != nil {
				return err
			}
			if len(res.Messages) == 0 {
				return nil
			}
			out = append(out, res.Messages...)
			off = res.NextOffset
		}
	})
	return out
}
