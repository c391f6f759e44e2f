package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Both members of the broadcasting group receive every invalidation, and
// the run closes what it opened without an error.
func TestBroadcast_EveryMemberReceivesEverything(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	assert.Equal(t, "cache-a received 4 of 4 invalidations\n"+
		"cache-b received 4 of 4 invalidations\n", out.String())
}
