package equeue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDedupGroup_NewerVersionNamesTheVersionsRead: a dedup group of a
// version this code does not know is refused with ErrUnsupportedFormat,
// and the error names both versions the engine reads: since delayed
// places (version 2) it reads groups of version 1 too, so "reads version
// 2" sent an operator looking for a store it could not read.
func TestDedupGroup_NewerVersionNamesTheVersionsRead(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	for _, version := range []byte{dedupGroupVersion1, dedupGroupVersion} {
		v := newDedupGroupValue(base, 0)
		v[0] = version
		v = appendDedupGroupEntry(v, base.UnixNano(), "x", dedupEntry{queue: 1, offset: 7, at: base})
		n, err := decodeDedupGroup(v, func([]byte, dedupEntry) {})
		require.NoError(t, err, "version %d is read", version)
		assert.Equal(t, 1, n)
	}
	v := newDedupGroupValue(base, 0)
	v[0] = dedupGroupVersion + 1
	_, err := decodeDedupGroup(v, func([]byte, dedupEntry) {})
	require.ErrorIs(t, err, ErrUnsupportedFormat)
	assert.Contains(t, err.Error(), "dedup group of format version 3")
	assert.Contains(t, err.Error(), "reads versions 1 and 2")
}
