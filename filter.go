package equeue

import (
	"fmt"
	"strings"
)

// tagFilter is a parsed subscription expression: "*" (or empty) matches
// every message; "A || B" matches messages tagged A or B.
type tagFilter struct {
	all  bool
	tags []string
	expr string
}

func parseFilter(expr string) (tagFilter, error) {
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
		if !contains(f.tags, p) {
			f.tags = append(f.tags, p)
		}
	}
	f.expr = strings.Join(f.tags, " || ")
	return f, nil
}

func (f tagFilter) match(tag string) bool {
	return f.all || contains(f.tags, tag)
}

// matchBytes is match for a tag still in its record.
func (f tagFilter) matchBytes(tag []byte) bool {
	if f.all {
		return true
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
