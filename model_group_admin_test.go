package equeue_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// groupLifeOwed is what the model's group owes one stored message, by the
// README's promises for the admin operations run on the group meanwhile.
// Untouched, a message is owed exactly one delivery to each receiver, plus
// one for each of its dead letters redriven. An offset reset or a group's
// deletion makes its counts inexact (handlers running then, retries
// pending, copies in the deleted retry topic): from then on it is owed
// floors counted from the counts seen just before that operation (its
// base): one more delivery to each receiver when the operation promises
// it again (a reset to the earliest message, or to a time before the
// message was sent; a deletion, after which the group starts again from
// its configured start, the oldest message), none when the operation may
// have skipped it (a reset to the latest message, or to a time after it
// was sent), and one more for each dead letter of it redriven since.
type groupLifeOwed struct {
	exact    bool           // no reset or deletion touched it: its counts are exact
	promised bool           // one delivery is owed since base
	redrives int            // its dead letters redriven since base
	base     map[string]int // per receiver: successes (failures, if it always fails) at base
	deadBase int            // its dead letters at base
}

// newGroupLifeOwed is what a message just stored is owed.
func newGroupLifeOwed() *groupLifeOwed {
	return &groupLifeOwed{exact: true, promised: true, base: map[string]int{}}
}

// copies is how many deliveries of the message each receiver owes since
// base.
func (o *groupLifeOwed) copies() int {
	if o.promised {
		return o.redrives + 1
	}
	return o.redrives
}

// rebase makes message n's counts inexact, promised again or not, with
// base the counts in seen and dead.
func (o *groupLifeOwed) rebase(n int, promised bool, seen map[string]*groupLifeSeen, dead map[int]int) {
	always, _ := groupLifeFate(n)
	o.exact, o.promised, o.redrives, o.deadBase = false, promised, 0, dead[n]
	o.base = make(map[string]int, len(seen))
	for who, s := range seen {
		if always {
			o.base[who] = s.failures[n]
		} else {
			o.base[who] = s.successes[n]
		}
	}
}

// done reports whether receiver who, which saw s, had every delivery of
// message n that o owes.
func (o *groupLifeOwed) done(n int, who string, s *groupLifeSeen) bool {
	if always, _ := groupLifeFate(n); always {
		return s.failures[n] >= o.base[who]+groupLifeAttempts*o.copies()
	}
	return !o.promised || s.successes[n] > o.base[who]
}

// groupLifeMark is a point of the history: when a step began and how many
// messages had been sent before it. A reset to its time promises the
// messages sent from then on again.
type groupLifeMark struct {
	at   time.Time
	sent int
}

// listDeadLetters lists every dead letter of group (none when it has no
// dead-letter topic).
func listDeadLetters(t *testing.T, e *equeue.Engine, group string) []equeue.DLQEntry {
	t.Helper()
	var out []equeue.DLQEntry
	for from := int64(0); ; {
		page, err := e.ListDeadLetters(context.Background(), group, equeue.ListDeadLettersRequest{From: from, Max: 1024})
		if errors.Is(err, equeue.ErrTopicNotFound) || errors.Is(err, equeue.ErrGroupNotFound) {
			return out
		}
		require.NoError(t, err)
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		from = page[len(page)-1].Offset + 1
	}
}

// deadLetterNumber is the model's message number of a dead letter.
func deadLetterNumber(t *testing.T, d equeue.DLQEntry) int {
	t.Helper()
	n, err := strconv.Atoi(string(d.Message.Body))
	require.NoError(t, err)
	return n
}
