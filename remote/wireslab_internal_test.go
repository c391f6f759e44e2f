package remote

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A client's small appends are encoded into buffers cut from a shared
// slab: one allocation per slab, not one per append (per message of every
// SendAsync). Each append's bytes stay its own: the same bytes as encoded
// alone, not changed by later appends.
func TestWireSlab_SmallAppendsShareAllocations(t *testing.T) {
	var slab wireSlab
	req := func(i int) *equeue.AppendRequest {
		return &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: bytes.Repeat([]byte{byte(i)}, 256)}}}
	}
	one := req(1)
	encode := func() {
		_, ok, err := encodeAppendIn(one, &slab)
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.Less(t, testing.AllocsPerRun(1000, encode), 0.1, "allocations per append of 256 bytes")

	var wires, wants [][]byte
	for i := range 300 {
		r := req(i)
		if i%7 == 0 { // now and then one too large for a slab
			r.Messages[0].Body = bytes.Repeat([]byte{byte(i)}, maxSlabPiece+1)
		}
		got, ok, err := encodeAppendIn(r, &slab)
		require.NoError(t, err)
		require.True(t, ok)
		want, ok, err := encodeAppend(r)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, want, got, "append %d", i)
		require.Equal(t, len(got), cap(got), "append %d: no room to grow into the next one's bytes", i)
		wires, wants = append(wires, got), append(wants, want)
	}
	for i := range wires {
		require.Equal(t, wants[i], wires[i], fmt.Sprintf("append %d after the later ones", i))
	}
}
