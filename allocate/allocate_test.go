package allocate_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/allocate"
)

// qs returns the queues of topic with the given IDs, in the order given.
func qs(topic string, ids ...int) []allocate.Queue {
	out := make([]allocate.Queue, 0, len(ids))
	for _, id := range ids {
		out = append(out, allocate.Queue{Topic: topic, ID: id})
	}
	return out
}

// span returns the queues of topic with IDs 0..n-1.
func span(topic string, n int) []allocate.Queue {
	out := make([]allocate.Queue, 0, n)
	for id := range n {
		out = append(out, allocate.Queue{Topic: topic, ID: id})
	}
	return out
}

// consumerIDs returns "c0".."c{m-1}".
func consumerIDs(m int) []string {
	out := make([]string, 0, m)
	for i := range m {
		out = append(out, fmt.Sprintf("c%d", i))
	}
	return out
}

func cat(parts ...[]allocate.Queue) []allocate.Queue {
	var out []allocate.Queue
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// allocCase is one row of a strategy's table test.
type allocCase struct {
	name      string
	queues    []allocate.Queue
	consumers []string
	want      map[string][]allocate.Queue
}

func runTable(t *testing.T, s allocate.Strategy, cases []allocCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			queues := slices.Clone(tc.queues)
			consumers := slices.Clone(tc.consumers)

			got := s.Allocate(queues, consumers)

			require.NotNil(t, got)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.queues, queues, "queues input modified")
			assert.Equal(t, tc.consumers, consumers, "consumers input modified")
		})
	}
}

func TestByName(t *testing.T) {
	for _, name := range []string{"average", "average-by-circle", "consistent-hash"} {
		s, err := allocate.ByName(name)
		require.NoError(t, err, name)
		require.NotNil(t, s)
		assert.Equal(t, name, s.Name())
	}

	for _, name := range []string{"", "Average", "hash", "average "} {
		s, err := allocate.ByName(name)
		require.ErrorIs(t, err, allocate.ErrUnknownStrategy, "name %q", name)
		assert.Nil(t, s)
	}
}

func TestByName_ConsistentHashUsesDefault(t *testing.T) {
	s, err := allocate.ByName("consistent-hash")
	require.NoError(t, err)
	queues, consumers := span("t", 64), consumerIDs(5)
	assert.Equal(t, allocate.ConsistentHash(160).Allocate(queues, consumers), s.Allocate(queues, consumers))
}

func TestStrategies_Names(t *testing.T) {
	assert.Equal(t, "average", allocate.Average().Name())
	assert.Equal(t, "average-by-circle", allocate.AverageByCircle().Name())
	assert.Equal(t, "consistent-hash", allocate.ConsistentHash(0).Name())
	assert.Equal(t, "consistent-hash", allocate.ConsistentHash(7).Name())
}

func TestStrategies_NilInputs(t *testing.T) {
	for _, s := range allStrategies() {
		t.Run(s.Name(), func(t *testing.T) {
			got := s.Allocate(nil, nil)
			require.NotNil(t, got)
			assert.Empty(t, got)

			got = s.Allocate(nil, []string{"b", "a"})
			assert.Equal(t, map[string][]allocate.Queue{"a": {}, "b": {}}, got)

			got = s.Allocate(span("t", 3), nil)
			require.NotNil(t, got)
			assert.Empty(t, got)
		})
	}
}

// TestStrategies_ResultsDoNotAlias checks that growing one consumer's slice
// leaves every other consumer's queues alone.
func TestStrategies_ResultsDoNotAlias(t *testing.T) {
	for _, s := range allStrategies() {
		t.Run(s.Name(), func(t *testing.T) {
			queues, consumers := span("t", 10), consumerIDs(4)
			got := s.Allocate(queues, consumers)
			want := s.Allocate(queues, consumers)
			for _, c := range consumers {
				got[c] = append(got[c], allocate.Queue{Topic: "zz", ID: -1})
				for _, other := range consumers {
					if other != c {
						require.Equal(t, want[other], got[other][:len(want[other])])
					}
				}
				got[c] = got[c][:len(got[c])-1]
			}
		})
	}
}

func allStrategies() []allocate.Strategy {
	return []allocate.Strategy{
		allocate.Average(),
		allocate.AverageByCircle(),
		allocate.ConsistentHash(0),
	}
}

func BenchmarkAllocate(b *testing.B) {
	queues, consumers := span("orders", 256), consumerIDs(16)
	for _, s := range allStrategies() {
		b.Run(s.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = s.Allocate(queues, consumers)
			}
		})
	}
}
