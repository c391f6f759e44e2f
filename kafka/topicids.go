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

// topicsVersioner is the optional capability of a Broker of telling
// whether its topics changed (equeue.Engine.TopicsVersion: it grows at
// each creation and deletion). With it, topicNames is known whole while
// the version stays, and an ID no topic has is answered without listing
// the topics again; without it, every such ID costs a listing.
type topicsVersioner interface {
	TopicsVersion() uint64
}

var (
	_ topicsVersioner = (*equeue.Engine)(nil)
	_ topicsVersioner = (*equeue.Namespace)(nil)
)

// topicNames remembers the names of the topics whose Kafka IDs (topicID)
// the last listing found, for the requests that name topics by ID
// (OffsetCommit v10, OffsetFetch v10, Metadata v12). A name remembered is
// only a guess: its topic is read again and kept only if its ID is still
// the one asked for (a topic deleted and created again has another). Each
// listing replaces the whole map, so it holds no more than the topics
// there were.
type topicNames struct {
	mu    sync.Mutex
	names map[[16]byte]string
	// listed is the broker's TopicsVersion read before the listing names
	// came from, and whole says there was one (the broker tells it): while
	// the version is still listed, no topic was created or deleted since,
	// so an ID names lacks is no topic's.
	listed uint64
	whole  bool
}

// lookup returns the name remembered for id, and whether an ID without
// one is known to be no topic's: names is whole and the broker's topics
// are still those it was listed from (version, read by the caller).
func (n *topicNames) lookup(id [16]byte, version uint64, versioned bool) (name string, ok, none bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	name, ok = n.names[id]
	return name, ok, !ok && versioned && n.whole && n.listed == version
}

// topicsVersion returns the broker's TopicsVersion, and whether it tells
// one (topicsVersioner).
func (s *Server) topicsVersion() (uint64, bool) {
	v, ok := s.b.(topicsVersioner)
	if !ok {
		return 0, false
	}
	return v.TopicsVersion(), true
}

// topicsByID returns the visible topics that have the given Kafka IDs, by
// ID; an ID that none has is absent. A store failure is returned as it is.
// IDs it remembers cost a read of one topic each; an ID it knows to be no
// topic's (topicNames.lookup), nothing; any other ID, one listing of the
// topics for all of them. So a client that asks again and again for an ID
// no topic has costs one listing, not one a request, until a topic is
// created or deleted.
func (s *Server) topicsByID(ctx context.Context, ids [][16]byte) (map[[16]byte]equeue.TopicInfo, error) {
	out := make(map[[16]byte]equeue.TopicInfo, len(ids))
	version, versioned := s.topicsVersion()
	var missing bool
	for _, id := range ids {
		if _, done := out[id]; done {
			continue
		}
		name, ok, none := s.ids.lookup(id, version, versioned)
		if !ok {
			missing = missing || !none
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
	// The version is read again before the listing: a topic created or
	// deleted while it runs moves it past what is remembered, so the next
	// request lists again rather than trust a listing that may lack it.
	version, versioned = s.topicsVersion()
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
	s.ids.names, s.ids.listed, s.ids.whole = names, version, versioned
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
