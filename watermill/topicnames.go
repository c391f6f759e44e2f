package watermill

import (
	"container/list"
	"sync"
)

// maxKnownTopics bounds how many topic names a Publisher or Subscriber
// remembers having made sure of (see topicMaker): past it, the name used
// least recently is forgotten, and made sure of again on its next use.
const maxKnownTopics = 4096

// recentNames is a set of at most max names that forgets the one used
// least recently to take a new one. Safe for concurrent use.
type recentNames struct {
	mu    sync.Mutex
	max   int
	order list.List                // of string, the most recently used first
	at    map[string]*list.Element // name -> its element in order
}

func newRecentNames(max int) *recentNames {
	return &recentNames{max: max, at: map[string]*list.Element{}}
}

// has reports whether name is in the set, and marks it used.
func (r *recentNames) has(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	el, ok := r.at[name]
	if ok {
		r.order.MoveToFront(el)
	}
	return ok
}

// add puts name in the set, forgetting the least recently used name when
// the set is full.
func (r *recentNames) add(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if el, ok := r.at[name]; ok {
		r.order.MoveToFront(el)
		return
	}
	r.at[name] = r.order.PushFront(name)
	for r.order.Len() > r.max {
		old := r.order.Back()
		r.order.Remove(old)
		delete(r.at, old.Value.(string))
	}
}

// remove takes name out of the set.
func (r *recentNames) remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if el, ok := r.at[name]; ok {
		r.order.Remove(el)
		delete(r.at, name)
	}
}

// len returns how many names the set holds.
func (r *recentNames) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.order.Len()
}
