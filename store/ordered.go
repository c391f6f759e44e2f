package store

import (
	"slices"
	"sort"
	"strings"
)

// orderedMap maps string keys to values in key order, for the metadata of
// the memory store. Lookups and the seek of an ordered scan cost O(log n),
// so a scan that stops early costs what it returns, however many keys
// follow; an insert or a delete moves at most a leaf and, when a leaf
// splits or empties, the list of leaf pointers.
//
// The keys sit in a list of leaves, each a sorted run of at most
// 2*leafSize keys; the leaves are in key order and never empty. A leaf
// that falls below leafSize/4 merges with a neighbour when the two fit in
// one leaf, so leaves stay about half full on average.
//
// It is not safe for concurrent use; Memory guards it with its mutex.
type orderedMap struct {
	leaves   []*leaf
	n        int
	leafSize int
}

// defaultLeafSize is the target size of a leaf: small enough that shifting
// a leaf's entries on insert is a short copy, large enough that the list of
// leaves stays short.
const defaultLeafSize = 128

// newOrderedMap returns an empty map whose leaves hold up to 2*leafSize keys.
func newOrderedMap(leafSize int) *orderedMap {
	return &orderedMap{leafSize: max(leafSize, 4)}
}

type leaf struct {
	keys []string
	vals [][]byte
}

func (l *leaf) last() string { return l.keys[len(l.keys)-1] }

// Len returns the number of keys.
func (m *orderedMap) Len() int { return m.n }

// find returns the index of the leaf that holds key, or would: the first
// leaf whose last key is >= key (len(m.leaves) when key is above them all).
func (m *orderedMap) find(key string) int {
	return sort.Search(len(m.leaves), func(i int) bool { return m.leaves[i].last() >= key })
}

// Get returns the value of key.
func (m *orderedMap) Get(key string) ([]byte, bool) {
	li := m.find(key)
	if li == len(m.leaves) {
		return nil, false
	}
	l := m.leaves[li]
	i, ok := slices.BinarySearch(l.keys, key)
	if !ok {
		return nil, false
	}
	return l.vals[i], true
}

// Set stores v under key and returns the value it replaced, if any.
func (m *orderedMap) Set(key string, v []byte) (old []byte, had bool) {
	if len(m.leaves) == 0 {
		m.leaves = []*leaf{{keys: []string{key}, vals: [][]byte{v}}}
		m.n = 1
		return nil, false
	}
	li := m.find(key)
	if li == len(m.leaves) {
		li-- // above every key: the last leaf takes it
	}
	l := m.leaves[li]
	i, ok := slices.BinarySearch(l.keys, key)
	if ok {
		old, l.vals[i] = l.vals[i], v
		return old, true
	}
	l.keys = slices.Insert(l.keys, i, key)
	l.vals = slices.Insert(l.vals, i, v)
	m.n++
	if len(l.keys) > 2*m.leafSize {
		half := len(l.keys) / 2
		right := &leaf{
			keys: append(make([]string, 0, 2*m.leafSize+1), l.keys[half:]...),
			vals: append(make([][]byte, 0, 2*m.leafSize+1), l.vals[half:]...),
		}
		clear(l.keys[half:])
		clear(l.vals[half:])
		l.keys, l.vals = l.keys[:half], l.vals[:half]
		m.leaves = slices.Insert(m.leaves, li+1, right)
	}
	return nil, false
}

// Delete removes key and returns the value it had, if any.
func (m *orderedMap) Delete(key string) (old []byte, had bool) {
	li := m.find(key)
	if li == len(m.leaves) {
		return nil, false
	}
	l := m.leaves[li]
	i, ok := slices.BinarySearch(l.keys, key)
	if !ok {
		return nil, false
	}
	old = l.vals[i]
	l.keys = slices.Delete(l.keys, i, i+1)
	l.vals = slices.Delete(l.vals, i, i+1)
	m.n--
	switch {
	case len(l.keys) == 0:
		m.leaves = slices.Delete(m.leaves, li, li+1)
	case len(l.keys) < m.leafSize/4:
		m.mergeSmall(li)
	}
	return old, true
}

// mergeSmall folds the small leaf li into a neighbour that has room for it.
func (m *orderedMap) mergeSmall(li int) {
	l := m.leaves[li]
	if li+1 < len(m.leaves) && len(l.keys)+len(m.leaves[li+1].keys) <= 2*m.leafSize {
		r := m.leaves[li+1]
		l.keys = append(l.keys, r.keys...)
		l.vals = append(l.vals, r.vals...)
		m.leaves = slices.Delete(m.leaves, li+1, li+2)
		return
	}
	if li > 0 && len(l.keys)+len(m.leaves[li-1].keys) <= 2*m.leafSize {
		p := m.leaves[li-1]
		p.keys = append(p.keys, l.keys...)
		p.vals = append(p.vals, l.vals...)
		m.leaves = slices.Delete(m.leaves, li, li+1)
	}
}

// Ascend calls fn, in key order, for every key at or after from that has
// the prefix, until fn returns false. fn must not change m.
func (m *orderedMap) Ascend(from, prefix string, fn func(key string, v []byte) bool) {
	if from < prefix {
		from = prefix
	}
	li := m.find(from)
	if li == len(m.leaves) {
		return
	}
	i, _ := slices.BinarySearch(m.leaves[li].keys, from)
	for ; li < len(m.leaves); li, i = li+1, 0 {
		l := m.leaves[li]
		for ; i < len(l.keys); i++ {
			if !strings.HasPrefix(l.keys[i], prefix) || !fn(l.keys[i], l.vals[i]) {
				return
			}
		}
	}
}
