package equeue

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/allocate"
)

// TestPriority_AllocateLanesTogether: every strategy gives all lanes of a
// queue to one member, and divides the queues as it divides a plain topic.
func TestPriority_AllocateLanesTogether(t *testing.T) {
	for _, name := range []string{"average", "average-by-circle", "consistent-hash"} {
		s, err := allocate.ByName(name)
		require.NoError(t, err)
		for _, members := range []int{1, 2, 3, 5} {
			const queues, lanes = 7, 3
			var qs, plain []allocate.Queue
			for i := range queues * lanes {
				qs = append(qs, allocate.Queue{Topic: "t", ID: i})
			}
			for i := range queues {
				plain = append(plain, allocate.Queue{Topic: "t", ID: i})
			}
			var ids []string
			for i := range members {
				ids = append(ids, fmt.Sprintf("m%d", i))
			}
			target := map[QueueRef]string{}
			allocateLanes(s, []laneTopic{{name: "t", lanes: lanes, queues: qs}}, ids, target)
			require.Len(t, target, queues*lanes, "%s/%d: every lane allocated", name, members)
			for id, got := range s.Allocate(plain, ids) {
				for _, q := range got {
					for l := range lanes {
						assert.Equal(t, id, target[QueueRef{Topic: "t", Queue: q.ID*lanes + l}], "%s/%d: queue %d lane %d", name, members, q.ID, l)
					}
				}
			}
		}
	}
}

// TestPriority_AllocateLanesManyTopics: allocating several topics at once,
// with and without lanes, divides each as a call for it alone does.
func TestPriority_AllocateLanesManyTopics(t *testing.T) {
	topics := []struct {
		name          string
		queues, lanes int
	}{{"a", 5, 1}, {"b", 4, 3}, {"c", 3, 2}, {"d", 1, 1}}
	for _, name := range []string{"average", "average-by-circle", "consistent-hash"} {
		s, err := allocate.ByName(name)
		require.NoError(t, err)
		for _, members := range []int{1, 2, 3, 7} {
			var ids []string
			for i := range members {
				ids = append(ids, fmt.Sprintf("m%d", i))
			}
			var all []laneTopic
			want := map[QueueRef]string{}
			for _, tp := range topics {
				lt := laneTopic{name: tp.name, lanes: tp.lanes}
				for i := range tp.queues * tp.lanes {
					lt.queues = append(lt.queues, allocate.Queue{Topic: tp.name, ID: i})
				}
				all = append(all, lt)
				allocateLanes(s, []laneTopic{lt}, ids, want)
			}
			got := map[QueueRef]string{}
			allocateLanes(s, all, ids, got)
			assert.Equal(t, want, got, "%s/%d", name, members)
		}
	}
}

// TestPriority_OldTopicMetadataReads: topic metadata stored before
// priorities existed reads as a topic without them; the field is written
// only for a topic with priorities.
func TestPriority_OldTopicMetadataReads(t *testing.T) {
	var m topicMeta
	require.NoError(t, json.Unmarshal([]byte(`{"name":"t","id":3,"queues":4,"created_at":"2026-01-02T03:04:05Z"}`), &m))
	assert.Equal(t, 0, m.Priorities)
	assert.Equal(t, 1, (&topic{lanes: m.Priorities}).laneCount())
	v, err := json.Marshal(topicMeta{Name: "t", Queues: 4})
	require.NoError(t, err)
	assert.NotContains(t, string(v), "priorities")
	v, err = json.Marshal(topicMeta{Name: "t", Queues: 4, Priorities: 2})
	require.NoError(t, err)
	assert.Contains(t, string(v), `"priorities":2`)
}

// TestPriority_RerouteKeepsLane: a redriven message whose queue is closed
// (or not in its lane) goes to a writable queue of its lane, and to any
// lane only when its lane has none.
func TestPriority_RerouteKeepsLane(t *testing.T) {
	m := &Message{Keys: []string{"k"}}
	r := Route{Queues: 6, Priorities: 3, Writable: []int{0, 1, 2, 5}} // queue 1 has only lane 2 open
	assert.Equal(t, 1, r.reroute(m, 1), "lane 1 of queue 1 is closed: lane 1 of queue 0")
	r = Route{Queues: 6, Priorities: 3, Writable: []int{0, 2}}
	got := r.reroute(m, 1)
	assert.Contains(t, []int{0, 2}, got, "no lane 1 open: any writable queue")
	r = Route{Queues: 4, Writable: []int{0, 3}}
	assert.Contains(t, []int{0, 3}, r.reroute(m, 0), "without priorities: any writable queue")
}
