package allocate_test

import (
	"testing"

	"github.com/equeue-go/equeue/allocate"
)

func TestAverageByCircle_Table(t *testing.T) {
	runTable(t, allocate.AverageByCircle(), []allocCase{
		{
			name:      "10 queues 4 consumers",
			queues:    span("t", 10),
			consumers: consumerIDs(4),
			want: map[string][]allocate.Queue{
				"c0": qs("t", 0, 4, 8), "c1": qs("t", 1, 5, 9), "c2": qs("t", 2, 6), "c3": qs("t", 3, 7),
			},
		},
		{
			name:      "4 queues 3 consumers",
			queues:    span("t", 4),
			consumers: consumerIDs(3),
			want: map[string][]allocate.Queue{
				"c0": qs("t", 0, 3), "c1": qs("t", 1), "c2": qs("t", 2),
			},
		},
		{
			name:      "8 queues 3 consumers",
			queues:    span("t", 8),
			consumers: consumerIDs(3),
			want: map[string][]allocate.Queue{
				"c0": qs("t", 0, 3, 6), "c1": qs("t", 1, 4, 7), "c2": qs("t", 2, 5),
			},
		},
		{
			name:      "2 queues 5 consumers",
			queues:    span("t", 2),
			consumers: consumerIDs(5),
			want: map[string][]allocate.Queue{
				"c0": qs("t", 0), "c1": qs("t", 1), "c2": {}, "c3": {}, "c4": {},
			},
		},
		{
			name:      "0 queues",
			queues:    nil,
			consumers: consumerIDs(2),
			want:      map[string][]allocate.Queue{"c0": {}, "c1": {}},
		},
		{
			name:      "0 consumers",
			queues:    span("t", 4),
			consumers: []string{},
			want:      map[string][]allocate.Queue{},
		},
		{
			name:      "1 consumer",
			queues:    span("t", 5),
			consumers: []string{"only"},
			want:      map[string][]allocate.Queue{"only": span("t", 5)},
		},
		{
			name:      "duplicates",
			queues:    qs("t", 3, 0, 1, 1, 2, 3, 0),
			consumers: []string{"c1", "c0", "c1", "c0"},
			want: map[string][]allocate.Queue{
				"c0": qs("t", 0, 2), "c1": qs("t", 1, 3),
			},
		},
		{
			name:      "unsorted queues and consumers",
			queues:    cat(qs("b", 10, 2), qs("a", 1), qs("b", 9), qs("a", 0)),
			consumers: []string{"z", "a"},
			want: map[string][]allocate.Queue{
				"a": cat(qs("a", 0), qs("b", 2, 10)),
				"z": cat(qs("a", 1), qs("b", 9)),
			},
		},
	})
}
