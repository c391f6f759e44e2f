package equeue

import (
	"fmt"
	"strings"
)

// MaxFilterBytes is the longest tag filter expression a pull or a
// subscription takes; a longer one is ErrInvalidFilter.
const MaxFilterBytes = 16 << 10

// tagFilter is a parsed subscription expression: "*" (or empty) matches
// every message; "A || B" matches messages tagged A or B.
type tagFilter struct {
	all  bool
	tags []string
	// set holds tags too when there are more than setFrom, so that a
	// message's tag is looked up rather than compared with each.
	set  map[string]struct{}
	expr string
}

// setFrom is how many tags a filter compares one by one before it keeps
// them in a set.
const setFrom = 8

func parseFilter(expr string) (tagFilter, error) {
	if len(expr) > MaxFilterBytes {
		return tagFilter{}, fmt.Errorf("%w: %d bytes, longer than %d (MaxFilterBytes)", ErrInvalidFilter, len(expr), MaxFilterBytes)
	}
	s := strings.TrimSpace(expr)
	if s == "" || s == "*" {
		return tagFilter{all: true, expr: "*"}, nil
	}
	parts := strings.Split(s, "||")
	f := tagFilter{tags: make([]string, 0, len(parts))}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" || p == "*" || strings.ContainsAny(p, "|\x00") {
			return tagFilter{}, fmt.Errorf("%w: %q (want \"*\" or \"A || B\")", ErrInvalidFilter, expr)
		}
		if f.has(p) {
			continue
		}
		f.tags = append(f.tags, p)
		if f.set != nil {
			f.set[p] = struct{}{}
		} else if len(f.tags) > setFrom {
			f.set = make(map[string]struct{}, len(parts))
			for _, t := range f.tags {
				f.set[t] = struct{}{}
			}
		}
	}
	f.expr = strings.Join(f.tags, " || ")
	return f, nil
}

// has reports whether tag is one of f's tags.
func (f tagFilter) has(tag string) bool {
	if f.set != nil {
		_, ok := f.set[tag]
		return ok
	}
	return contains(f.tags, tag)
}

func (f tagFilter) match(tag string) bool {
	return f.all || f.has(tag)
}

// matchBytes is match for a tag still in its record.
func (f tagFilter) matchBytes(tag []byte) bool {
	if f.all {
		return true
	}
	if f.set != nil {
		_, ok := f.set[string(tag)]
		return ok
	}
	for _, v := range f.tags {
		if v == string(tag) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ValidateFilter reports whether expr is a valid subscription expression.
func ValidateFilter(expr string) error {
	_, err := parseFilter(expr)
	return err
}
