package console

import (
	"errors"
	"fmt"

	"github.com/equeue-go/equeue"
)

// goneTopics gathers the answers of a redrive's calls that left dead
// letters whose topics are gone (ErrTopicNotFound). Redrive goes on past
// such dead letters; so does the console across its calls, ranges of the
// selected offsets or, at a rate, one dead letter each, and it tells the
// first such answer at the end.
type goneTopics struct {
	// first is the first call's answer matching ErrTopicNotFound.
	first error
	// others counts the calls answered so after the first.
	others int
}

// add keeps err, a call's answer, and reports whether the redrive goes
// on: when err is nil or matches ErrTopicNotFound, but not when it also
// matches ErrGroupNotFound (the group's dead letters themselves are gone,
// their topic deleted during the redrive: every later call would fail
// the same way).
func (g *goneTopics) add(err error) bool {
	switch {
	case err == nil:
		return true
	case !errors.Is(err, equeue.ErrTopicNotFound), errors.Is(err, equeue.ErrGroupNotFound):
		return false
	case g.first == nil:
		g.first = err
	default:
		g.others++
	}
	return true
}

// err returns the first answer kept, saying how many more calls (of what
// each sent: what) left dead letters; nil when none did.
func (g *goneTopics) err(what string) error {
	if g.first == nil || g.others == 0 {
		return g.first
	}
	return fmt.Errorf("%w (and %d more %s with dead letters left)", g.first, g.others, what)
}
