package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/equeue-go/equeue"
)

// deadLetterRule is what consume --dead-letter-if matches: the messages
// that a consumer gives up on, as a handler returning equeue.DeadLetter
// would, so that dead letters can be made (and a walkthrough reproduced)
// from the command line alone.
type deadLetterRule struct {
	expr   string
	reason string
	match  func(*equeue.Message) bool
}

// parseDeadLetterRule parses EXPR: "*" (every message), "tag=T", "key=K",
// "prop.NAME=V", "body=B" (the whole body) or "body~S" (the body contains S).
func parseDeadLetterRule(expr, reason string) (*deadLetterRule, error) {
	r := &deadLetterRule{expr: expr, reason: reason}
	if r.reason == "" {
		r.reason = "dead-lettered by equeue consume --dead-letter-if " + expr
	}
	if expr == "*" {
		r.match = func(*equeue.Message) bool { return true }
		return r, nil
	}
	if v, ok := strings.CutPrefix(expr, "body~"); ok {
		r.match = func(m *equeue.Message) bool { return strings.Contains(string(m.Body), v) }
		return r, nil
	}
	name, v, ok := strings.Cut(expr, "=")
	switch {
	case !ok:
	case name == "tag":
		r.match = func(m *equeue.Message) bool { return m.Tag == v }
	case name == "key":
		r.match = func(m *equeue.Message) bool { return slices.Contains(m.Keys, v) }
	case name == "body":
		r.match = func(m *equeue.Message) bool { return string(m.Body) == v }
	case strings.HasPrefix(name, "prop.") && len(name) > len("prop."):
		p := strings.TrimPrefix(name, "prop.")
		r.match = func(m *equeue.Message) bool { x, ok := m.Properties[p]; return ok && x == v }
	}
	if r.match == nil {
		return nil, fmt.Errorf("%q: use *, tag=T, key=K, prop.NAME=V, body=B or body~S", expr)
	}
	return r, nil
}

// deadLetter moves m, pulled from q by member of group, to the group's
// dead-letter topic. It returns once the dead letter is stored, so the
// caller may commit past m.
func (l *consumeLoop) deadLetter(q equeue.QueueRef, m *equeue.Message) error {
	ctx, cancel := context.WithTimeout(context.Background(), commitWithin)
	defer cancel()
	_, err := l.b.SendBack(ctx, &equeue.SendBackRequest{
		Group: l.group, Member: l.pc.ID(), Grant: equeue.Grant{QueueRef: q}, Offset: m.Offset,
		Attempts: m.Attempt + 1, Cause: "dead letter: " + l.dl.reason, DeadLetter: true,
	})
	if err != nil {
		return fmt.Errorf("dead-letter %s/%d:%d: %w", m.Topic, m.Queue, m.Offset, err)
	}
	fmt.Fprintf(l.a.stderr, "dead-lettered %s/%d:%d to %s: %s\n", m.Topic, m.Queue, m.Offset, equeue.DLQTopic(l.group), l.dl.reason)
	return nil
}
