package equeue

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLostRange_CountsAndSkips(t *testing.T) {
	r := lostRange{from: 2, to: 20}
	assert.Equal(t, int64(5), r.held(0, 23), "0, 1, 20, 21, 22")
	assert.Equal(t, int64(3), r.held(5, 23))
	assert.Equal(t, int64(2), r.held(0, 2))
	assert.Equal(t, int64(1), r.skip(0, 1))
	assert.Equal(t, int64(20), r.skip(0, 2), "a cut of every record below the range passes it")
	assert.Equal(t, int64(21), r.skip(0, 3))
	assert.Equal(t, int64(21), r.skip(5, 1), "from inside the range")
	assert.Equal(t, int64(20), r.past(2))
	assert.Equal(t, int64(1), r.past(1))
	assert.Equal(t, int64(20), r.past(20))

	var none lostRange
	assert.Equal(t, int64(7), none.held(3, 10))
	assert.Equal(t, int64(5), none.skip(3, 2))
	assert.Equal(t, int64(0), none.past(0))
}
