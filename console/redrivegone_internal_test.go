package console

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestGoneTopics_StopsWhenTheGroupsDeadLettersAreGone: a call answered
// with dead letters left because their topics are gone lets the redrive
// go on to its next call, while one answered that the group's dead
// letters themselves are gone (an error matching ErrGroupNotFound as well
// as ErrTopicNotFound: the dead-letter topic deleted during the redrive)
// stops it, since every later call would fail the same way.
func TestGoneTopics_StopsWhenTheGroupsDeadLettersAreGone(t *testing.T) {
	var g goneTopics
	left := fmt.Errorf("%w: 1 dead letters left", equeue.ErrTopicNotFound)
	require.True(t, g.add(nil))
	require.True(t, g.add(left), "dead letters of a gone topic are passed by")
	require.True(t, g.add(left))
	groupGone := fmt.Errorf("%w: %w: dead letters deleted during the redrive", equeue.ErrGroupNotFound, equeue.ErrTopicNotFound)
	assert.False(t, g.add(groupGone), "the group's dead letters are gone: nothing more to redrive")
	assert.False(t, g.add(errors.New("other")))
	assert.ErrorIs(t, g.err("ranges"), equeue.ErrTopicNotFound)
	assert.Contains(t, g.err("ranges").Error(), "and 1 more ranges")
}
