package equeue

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// A redrive's sound mark written over a lost one updates the note of the
// lost mark (rewroteRedriven). When the mark is deleted between the
// moment the update finds the note and the moment it writes it (a trim of
// the dead letter, which the redrive's gates do not order), the deletion
// drops the note, and the update must not put it back: nothing would drop
// it again, and it would stay for the engine's life. Before, the update
// read the note and then stored it anew, whatever happened in between.
func TestLostRedrivenNotes_ARewriteRacingTheDeletionLeavesNone(t *testing.T) {
	e, mem := lostMarksEngine(t, "g", 1)
	key := redrivenKey("g", 0)
	var once sync.Once
	hook := func() {
		once.Do(func() { require.NoError(t, e.deleteRedrivenKeys([][]byte{key})) })
	}
	e.redrivenRewriteHook.Store(&hook)
	e.rewroteRedriven(key)

	_, err := mem.GetMeta(key)
	require.ErrorIs(t, err, store.ErrNotFound, "the mark was deleted")
	assert.Zero(t, lostRedrivenEntries(e), "no note is left of the deleted mark")
}
