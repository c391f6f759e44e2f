package equeue

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/equeue-go/equeue/store"
)

func TestLostRange_CountsAndSkips(t *testing.T) {
	one := lostRanges{{from: 2, to: 20}}
	two := lostRanges{{from: 2, to: 20}, {from: 25, to: 30}}
	for _, tc := range []struct {
		name string
		l    lostRanges
		do   func(lostRanges) int64
		want int64
	}{
		{"held around one range: 0, 1, 20, 21, 22", one, func(l lostRanges) int64 { return l.held(0, 23) }, 5},
		{"held from inside", one, func(l lostRanges) int64 { return l.held(5, 23) }, 3},
		{"held below", one, func(l lostRanges) int64 { return l.held(0, 2) }, 2},
		{"skip below", one, func(l lostRanges) int64 { return l.skip(0, 1) }, 1},
		{"a cut of every record below the range passes it", one, func(l lostRanges) int64 { return l.skip(0, 2) }, 20},
		{"skip past", one, func(l lostRanges) int64 { return l.skip(0, 3) }, 21},
		{"skip from inside the range", one, func(l lostRanges) int64 { return l.skip(5, 1) }, 21},
		{"past at the start", one, func(l lostRanges) int64 { return l.past(2) }, 20},
		{"past below", one, func(l lostRanges) int64 { return l.past(1) }, 1},
		{"past at the end", one, func(l lostRanges) int64 { return l.past(20) }, 20},

		{"held over two: 0, 1, 20 to 24, 30, 31", two, func(l lostRanges) int64 { return l.held(0, 32) }, 9},
		{"held between", two, func(l lostRanges) int64 { return l.held(21, 26) }, 4},
		{"skip into the gap between", two, func(l lostRanges) int64 { return l.skip(0, 4) }, 22},
		{"a cut of every record below the second passes it", two, func(l lostRanges) int64 { return l.skip(0, 7) }, 30},
		{"skip past both", two, func(l lostRanges) int64 { return l.skip(0, 8) }, 31},
		{"skip from inside the first past the second", two, func(l lostRanges) int64 { return l.skip(3, 6) }, 31},
		{"past in the second", two, func(l lostRanges) int64 { return l.past(27) }, 30},
		{"past between", two, func(l lostRanges) int64 { return l.past(22) }, 22},
		{"next start below both", two, func(l lostRanges) int64 { return l.nextStart(0) }, 2},
		{"next start between", two, func(l lostRanges) int64 { return l.nextStart(20) }, 25},
		{"next start past both", two, func(l lostRanges) int64 { return l.nextStart(30) }, math.MaxInt64},

		{"held of none", nil, func(l lostRanges) int64 { return l.held(3, 10) }, 7},
		{"skip of none", nil, func(l lostRanges) int64 { return l.skip(3, 2) }, 5},
		{"past of none", nil, func(l lostRanges) int64 { return l.past(0) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.do(tc.l))
		})
	}
}

func TestLostRanges_With(t *testing.T) {
	for _, tc := range []struct {
		name     string
		l        lostRanges
		from, to int64
		low      int64
		want     lostRanges
	}{
		{"into none", nil, 2, 5, 0, lostRanges{{2, 5}}},
		{"empty", nil, 5, 5, 0, nil},
		{"below the watermark", nil, 2, 5, 5, nil},
		{"cut at the watermark", nil, 2, 5, 3, lostRanges{{3, 5}}},
		{"disjoint, kept in order", lostRanges{{10, 12}}, 2, 5, 0, lostRanges{{2, 5}, {10, 12}}},
		{"touching, merged", lostRanges{{2, 5}}, 5, 8, 0, lostRanges{{2, 8}}},
		{"overlapping, merged", lostRanges{{2, 5}, {7, 9}}, 4, 8, 0, lostRanges{{2, 9}}},
		{"inside, unchanged", lostRanges{{2, 9}}, 3, 4, 0, lostRanges{{2, 9}}},
		{"those the watermark passed dropped", lostRanges{{2, 5}, {7, 9}}, 12, 14, 6, lostRanges{{7, 9}, {12, 14}}},
		{"the earliest kept past the bound", lostRanges{{2, 3}, {4, 5}, {6, 7}, {8, 9}}, 10, 11, 0, lostRanges{{2, 3}, {4, 5}, {6, 7}, {8, 9}}},
		{"an earlier one kept over a later", lostRanges{{2, 3}, {4, 5}, {6, 7}, {8, 9}}, 0, 1, 0, lostRanges{{0, 1}, {2, 3}, {4, 5}, {6, 7}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := append(lostRanges(nil), tc.l...)
			assert.Equal(t, tc.want, tc.l.with(tc.from, tc.to, tc.low))
			assert.Equal(t, before, tc.l, "the list it was made from is unchanged")
		})
	}
}

func TestLostRanges_EncodeDecode(t *testing.T) {
	l := lostRanges{{2, 20}, {25, 30}}
	got, ok := decodeLostRanges(l.encode(), 0)
	assert.True(t, ok)
	assert.Equal(t, l, got)
	got, ok = decodeLostRanges(l.encode(), 22)
	assert.True(t, ok)
	assert.Equal(t, lostRanges{{25, 30}}, got, "what the watermark passed is dropped")
	for _, bad := range [][]byte{{1, 2, 3}, make([]byte, 8), lostRanges{{5, 5}}.encode(), lostRanges{{5, 1}}.encode(), make([]byte, 16*(maxLostRanges+1))} {
		_, ok := decodeLostRanges(bad, 0)
		assert.False(t, ok, "%x", bad)
	}
	id := lostKey(store.QueueID{Topic: 7, Queue: 3})
	q, ok := parseLostKey(id)
	assert.True(t, ok)
	assert.Equal(t, store.QueueID{Topic: 7, Queue: 3}, q)
}
