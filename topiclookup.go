package equeue

// lookupTopic returns the topic named name, if the engine holds it.
//
// Sends look their topic up once each, and most go to the topic the
// previous one did: the engine remembers the topic it found last
// (lastTopic) and, in the topic, the TopicsVersion it was found at
// (topic.foundAt). While the version has not moved since, no topic was
// created or deleted, so the map would answer the same: the lookup then
// takes neither mu nor the map.
func (e *Engine) lookupTopic(name string) (*topic, bool) {
	if t := e.lastTopic.Load(); t != nil && t.name == name && t.foundAt.Load() == e.topicsVersion.Load()+1 {
		return t, true
	}
	e.mu.RLock()
	t, ok := e.topics[name]
	v := e.topicsVersion.Load() // raised under mu with the map: this map's version
	e.mu.RUnlock()
	if ok {
		// A lookup racing this one may store an older version: it was
		// found in the map at that version too, and an older one only
		// matches nothing.
		t.foundAt.Store(v + 1) // + 1: the zero value matches no version
		if e.lastTopic.Load() != t {
			e.lastTopic.Store(t)
			if e.topicsVersion.Load() != v {
				// A delete may have cleared lastTopic before this store
				// (forgetLastTopic): t is kept by no stale entry.
				e.lastTopic.CompareAndSwap(t, nil)
			}
		}
	}
	return t, ok
}

// forgetLastTopic drops t, just deleted, from lastTopic, which would
// otherwise keep it in memory until another topic is looked up. The
// version was raised before: a lookup storing t after this sees it, and
// drops t itself.
func (e *Engine) forgetLastTopic(t *topic) {
	e.lastTopic.CompareAndSwap(t, nil)
}
