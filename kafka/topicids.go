package kafka

import (
	"context"
	"errors"
	"sync"

	"github.com/equeue-go/equeue"
)

// errNoTopicWithID is what topicsByID answers for an ID no visible topic
// has (now): UNKNOWN_TOPIC_ID (errorCode).
var errNoTopicWithID = errors.New("kafka: no topic has that ID")

// topicNames remembers the names of the topics whose Kafka IDs (topicID)
// the last listing found, for the requests that name topics by ID
// (OffsetCommit v10). A name remembered is only a guess: its topic is read
// again and kept only if its ID is still the one asked for (a topic
// deleted and created again has another). Each listing replaces the whole
// map, so it holds no more than the topics there were.
type topicNames struct {
	mu    sync.Mutex
	names map[[16]byte]string
}

// topicsByID returns the visible topics that have the given Kafka IDs, by
// ID; an ID that none has is absent. A store failure is returned as it is.
// IDs it remembers cost a read of one topic each; any other ID, one
// listing of the topics for all of them.
func (s *Server) topicsByID(ctx context.Context, ids [][16]byte) (map[[16]byte]equeue.TopicInfo, error) {
	out := make(map[[16]byte]equeue.TopicInfo, len(ids))
	var missing bool
	for _, id := range ids {
		if _, done := out[id]; done {
			continue
		}
		s.ids.mu.Lock()
		name, ok := s.ids.names[id]
		s.ids.mu.Unlock()
		if !ok {
			missing = true
			continue
		}
		ti, err := s.b.Topic(ctx, name)
		switch {
		case errors.Is(err, equeue.ErrTopicNotFound):
			missing = true
		case err != nil:
			return nil, err
		case topicID(ti) == id:
			out[id] = ti
		default:
			missing = true
		}
	}
	if !missing {
		return out, nil
	}
	ts, err := s.b.Topics(ctx)
	if err != nil {
		return nil, err
	}
	names := make(map[[16]byte]string, len(ts))
	byID := make(map[[16]byte]equeue.TopicInfo, len(ts))
	for _, ti := range ts {
		if !hidden(ti.Name) {
			id := topicID(ti)
			names[id], byID[id] = ti.Name, ti
		}
	}
	s.ids.mu.Lock()
	s.ids.names = names
	s.ids.mu.Unlock()
	for _, id := range ids {
		if ti, ok := byID[id]; ok {
			out[id] = ti
		}
	}
	return out, nil
}

// idsOfTopics returns the Kafka IDs (topicID) of the named topics as they
// are now, by name; a topic that no longer is, or is hidden, is absent. A
// store failure is returned as it is.
func (s *Server) idsOfTopics(ctx context.Context, names []string) (map[string][16]byte, error) {
	out := make(map[string][16]byte, len(names))
	for _, name := range names {
		if hidden(name) {
			continue
		}
		ti, err := s.b.Topic(ctx, name)
		switch {
		case errors.Is(err, equeue.ErrTopicNotFound):
		case err != nil:
			return nil, err
		default:
			out[name] = topicID(ti)
		}
	}
	return out, nil
}
