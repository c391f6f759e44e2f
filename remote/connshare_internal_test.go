package remote

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A connection's share defaults to half of the bound, rounded up and at
// least the floor given; a share of the whole bound or more bounds nothing.
func TestConnShare_Defaults(t *testing.T) {
	for _, tc := range []struct {
		total   int64
		perConn int
		least   int64
		want    int64 // 0: no share
	}{
		{total: 65536, least: 2, want: 32768},
		{total: 4096, least: 1, want: 2048},
		{total: 9, least: 1, want: 5},
		{total: 8, perConn: 3, least: 2, want: 3},
		{total: 8, perConn: 1, least: 2, want: 1},
		{total: 8, perConn: 8, least: 2},
		{total: 8, perConn: 100, least: 2},
		{total: 3, least: 2, want: 2},
		{total: 2, least: 2},
		{total: 1, least: 1},
	} {
		c := newConnShare(tc.total, tc.perConn, tc.least, "calls", "Field")
		if tc.want == 0 {
			assert.Nil(t, c, "%+v", tc)
			continue
		}
		if assert.NotNil(t, c, "%+v", tc) {
			assert.Equal(t, tc.want, c.limit, "%+v", tc)
		}
	}
}
