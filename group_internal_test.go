package equeue

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGroupMeta_ConsumeFromKeepsStoredMeaning: group metadata stored before
// the default became earliest said 0 for latest; it still means latest, and
// what is stored now uses the same numbers.
func TestGroupMeta_ConsumeFromKeepsStoredMeaning(t *testing.T) {
	for _, tc := range []struct {
		stored string
		want   ConsumeFrom
	}{
		{`{"name":"g","from":0}`, ConsumeFromLatest},
		{`{"name":"g"}`, ConsumeFromLatest},
		{`{"name":"g","from":1}`, ConsumeFromEarliest},
		{`{"name":"g","from":2}`, ConsumeFromTimestamp},
	} {
		var m groupMeta
		require.NoError(t, json.Unmarshal([]byte(tc.stored), &m))
		g := newGroup(m)
		assert.Equal(t, tc.want, g.from, tc.stored)
		again, err := json.Marshal(groupMeta{Name: g.name, From: toStoredFrom(g.from)}) // as JoinGroup stores it
		require.NoError(t, err)
		var back groupMeta
		require.NoError(t, json.Unmarshal(again, &back))
		assert.Equal(t, tc.want, newGroup(back).from, "stored again: %s", again)
	}
	assert.Equal(t, storedFrom(1), toStoredFrom(ConsumeFromDefault), "the default is stored as earliest")
}
