package equeue

import (
	"encoding/json"
	"fmt"
)

// StoredTopics lists the topics an engine wrote to st, read from the
// store alone, without opening an engine on it: each topic's name, ID,
// creation time, priority lanes, limits and queues (their IDs and whether
// they take writes; offsets and message counts are left zero, as no record
// is read). Internal topics (retry, dead-letter) are included. A cluster
// follower, which runs no engine, answers Kafka clients' Metadata with it
// (cluster.Node.StoredTopics); what it lists is as of the last write the
// store applied.
func StoredTopics(st Store) ([]TopicInfo, error) {
	var out []TopicInfo
	err := st.ScanMeta(keyTopicPrefix, func(_, v []byte) error {
		var m topicMeta
		if err := json.Unmarshal(v, &m); err != nil {
			return fmt.Errorf("%w: topic metadata: %v", ErrCorrupt, err)
		}
		ti := TopicInfo{Name: m.Name, ID: m.ID, CreatedAt: m.CreatedAt, Priorities: m.Priorities}
		if m.Limits != nil {
			ti.Limits = *m.Limits
		}
		ti.Queues = make([]QueueInfo, m.Queues)
		for i := range ti.Queues {
			ti.Queues[i] = QueueInfo{ID: i, Writable: true}
		}
		for _, id := range m.ReadOnly {
			if id >= 0 && id < len(ti.Queues) {
				ti.Queues[id].Writable = false
			}
		}
		out = append(out, ti)
		return nil
	})
	return out, err
}
