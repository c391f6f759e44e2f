package equeue

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// A batch written through an AsyncWriter (a replicated store) whose write
// then fails may hold, beside new records, a duplicate of messages that
// earlier writes hold. The duplicate's answer is theirs, not the failed
// write's: "not stored" (a refusal matching ErrNotLeader, say) would
// contradict an original that was stored, and an original whose own write
// failed before is of unknown outcome.
func TestComplete_DuplicateInAFailedAsyncWriteAnswersForTheEarlierWrites(t *testing.T) {
	refused := errors.New("injected: write refused, not proposed")
	for _, tc := range []struct {
		name    string
		earlier error // an earlier AsyncWriter write's failure, or nil
		check   func(t *testing.T, err error)
	}{
		{"earlier writes stored", nil, func(t *testing.T, err error) {
			require.NoError(t, err, "the duplicate names messages earlier writes stored")
		}},
		{"an earlier write failed", errors.New("injected: an earlier entry given up"), func(t *testing.T, err error) {
			require.ErrorIs(t, err, ErrIndeterminate, "the duplicate names messages of a write of unknown outcome")
			require.NotErrorIs(t, err, refused, "not the refusal of a write that does not hold them")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Open("", &Options{InMemory: true})
			require.NoError(t, err)
			defer func() { require.NoError(t, e.Close()) }()
			if tc.earlier != nil {
				e.pipe.asyncFailed.Store(&tc.earlier)
			}
			dup := &command{kind: cmdAppend, duplicate: true}
			inBatch := &command{kind: cmdAppend, duplicate: true, dupInBatch: true}
			fresh := &command{kind: cmdAppend}
			f := &flight{batch: []*command{fresh, inBatch, dup}, b: &batchState{}, wait: func() error { return refused }}
			e.complete(f, nil)
			require.ErrorIs(t, fresh.err, refused, "the new records share their write's outcome")
			require.ErrorIs(t, inBatch.err, refused, "a duplicate of the batch's own records shares it too")
			tc.check(t, dup.err)
		})
	}
}
