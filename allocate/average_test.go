package allocate_test

import (
	"testing"

	"github.com/equeue-go/equeue/allocate"
)

func TestAverage_Table(t *testing.T) {
	runTable(t, allocate.Average(), []allocCase{
		{
			name:      "4 queues 3 consumers",
			queues:    span("t", 4),
			consumers: consumerIDs(3),
			want: map[string][]allocate.Queue{
				"c0": qs("t", 0, 1), "c1": qs("t", 2), "c2": qs("t", 3),
			},
		},
		{
			name:      "8 queues 3 consumers",
			queues:    span("t", 8),
			consumers: consumerIDs(3),
			want: map[string][]allocate.Queue{
				"c0": qs("t", 0, 1, 2), "c1": qs("t", 3, 4, 5), "c2": qs("t", 6, 7),
			},
		},
		{
			name:      "10 queues 4 consumers",
			queues:    span("t", 10),
			consumers: consumerIDs(4),
			want: map[string][]allocate.Queue{
				"c0": qs("t", 0, 1, 2), "c1": qs("t", 3, 4, 5), "c2": qs("t", 6, 7), "c3": qs("t", 8, 9),
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
			name:      "as many queues as consumers",
			queues:    span("t", 3),
			consumers: consumerIDs(3),
			want: map[string][]allocate.Queue{
				"c0": qs("t", 0), "c1": qs("t", 1), "c2": qs("t", 2),
			},
		},
		{
			name:      "0 queues",
			queues:    nil,
			consumers: consumerIDs(3),
			want:      map[string][]allocate.Queue{"c0": {}, "c1": {}, "c2": {}},
		},
		{
			name:      "0 consumers",
			queues:    span("t", 4),
			consumers: nil,
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
			queues:    cat(qs("t", 0, 1, 1, 2, 3, 0), qs("t", 3)),
			consumers: []string{"c1", "c0", "c1", "c2", "c0"},
			want: map[string][]allocate.Queue{
				"c0": qs("t", 0, 1), "c1": qs("t", 2), "c2": qs("t", 3),
			},
		},
		{
			name:      "unsorted queues and consumers",
			queues:    cat(qs("b", 10, 2), qs("a", 1), qs("b", 9), qs("a", 0)),
			consumers: []string{"z", "m", "a"},
			want: map[string][]allocate.Queue{
				"a": cat(qs("a", 0, 1)),
				"m": qs("b", 2, 9),
				"z": qs("b", 10),
			},
		},
		{
			name:      "consumer IDs sort as strings",
			queues:    span("t", 3),
			consumers: []string{"c2", "c10", "c1"},
			want: map[string][]allocate.Queue{
				"c1": qs("t", 0), "c10": qs("t", 1), "c2": qs("t", 2),
			},
		},
	})
}
