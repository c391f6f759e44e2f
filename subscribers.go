package equeue

import "sync"

// subscriberIndex maps each topic to the groups that subscribe to it, so a
// topic change (such as creating a group's retry topic) rebalances only
// those groups instead of scanning every group: with thousands of groups the
// scan made group creation quadratic.
type subscriberIndex struct {
	mu      sync.Mutex
	byTopic map[string]map[*group]struct{}
	topics  map[*group][]string // what each group is indexed under
}

// set indexes g under its current subscriptions. g.mu must be held.
func (x *subscriberIndex) set(g *group) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.byTopic == nil {
		x.byTopic = map[string]map[*group]struct{}{}
		x.topics = map[*group][]string{}
	}
	for _, t := range x.topics[g] {
		delete(x.byTopic[t], g)
		if len(x.byTopic[t]) == 0 {
			delete(x.byTopic, t)
		}
	}
	ts := make([]string, 0, len(g.subs))
	for _, s := range g.subs {
		if x.byTopic[s.Topic] == nil {
			x.byTopic[s.Topic] = map[*group]struct{}{}
		}
		x.byTopic[s.Topic][g] = struct{}{}
		ts = append(ts, s.Topic)
	}
	x.topics[g] = ts
}

// of returns the groups indexed under topic.
func (x *subscriberIndex) of(topic string) []*group {
	x.mu.Lock()
	defer x.mu.Unlock()
	gs := make([]*group, 0, len(x.byTopic[topic]))
	for g := range x.byTopic[topic] {
		gs = append(gs, g)
	}
	return gs
}
