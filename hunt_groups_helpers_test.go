package equeue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// huntSeen records which member handled which body, and how often.
type huntSeen struct {
	mu    sync.Mutex
	count map[string]int
	by    map[string]map[string]int // member -> body -> runs
}

func (h *huntSeen) add(member string, m *equeue.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count == nil {
		h.count, h.by = map[string]int{}, map[string]map[string]int{}
	}
	h.count[string(m.Body)]++
	if h.by[member] == nil {
		h.by[member] = map[string]int{}
	}
	h.by[member][string(m.Body)]++
}

// distinct is how many different bodies were handled.
func (h *huntSeen) distinct() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.count)
}

// of is how many different bodies member handled.
func (h *huntSeen) of(member string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.by[member])
}

// missing lists the bodies prefix-0..prefix-(n-1) never handled.
func (h *huntSeen) missing(prefix string, n int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for i := range n {
		if b := fmt.Sprintf("%s-%d", prefix, i); h.count[b] == 0 {
			out = append(out, b)
		}
	}
	return out
}

// huntSend sends prefix-0..prefix-(n-1) to topic, spread over its queues
// by queue number, and returns the bodies' count.
func huntSend(t testing.TB, b equeue.Broker, topic string, queues int, prefix string, n int) int {
	t.Helper()
	for i := range n {
		_, err := b.Append(context.Background(), &equeue.AppendRequest{Topic: topic, Queue: i % queues,
			Messages: []*equeue.Message{{Topic: topic, Body: []byte(fmt.Sprintf("%s-%d", prefix, i))}}})
		require.NoError(t, err)
	}
	return n
}

// huntCommitted sums a clustering group's committed offsets.
func huntCommitted(t testing.TB, e *equeue.Engine, group string) int64 {
	t.Helper()
	offs, err := e.GroupOffsets(context.Background(), group)
	require.NoError(t, err)
	var sum int64
	for _, o := range offs {
		sum += o
	}
	return sum
}
