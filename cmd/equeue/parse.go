package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// parseSync reads always, never or interval:DURATION.
func parseSync(s string) (equeue.SyncPolicy, error) {
	switch {
	case s == "always":
		return equeue.SyncAlways, nil
	case s == "never":
		return equeue.SyncNever, nil
	case strings.HasPrefix(s, "interval:"):
		d, err := time.ParseDuration(strings.TrimPrefix(s, "interval:"))
		if err != nil || d <= 0 {
			return equeue.SyncPolicy{}, fmt.Errorf("sync policy %q: the interval must be a positive duration such as interval:100ms", s)
		}
		return equeue.SyncInterval(d), nil
	}
	return equeue.SyncPolicy{}, fmt.Errorf("sync policy %q: use always, never or interval:DURATION (e.g. interval:100ms)", s)
}

// parseRights reads a comma-separated list of produce, consume, admin (or all).
func parseRights(s string) (remote.Rights, error) {
	var r remote.Rights
	for _, part := range strings.Split(s, ",") {
		switch strings.TrimSpace(part) {
		case "produce":
			r |= remote.RightProduce
		case "consume":
			r |= remote.RightConsume
		case "admin":
			r |= remote.RightAdmin
		case "all":
			r |= remote.RightAll
		default:
			return 0, fmt.Errorf("unknown right %q: use produce, consume, admin or all, separated by commas", part)
		}
	}
	return r, nil
}

// parseTokens reads serve's TOKEN=RIGHTS[@NAMESPACE] specs, from --token
// flags and --token-file lines (the namespaces: parseTokenNamespaces). Its
// errors name where a spec was given, never its token.
func parseTokens(specs []tokenSpec) (map[string]remote.Rights, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := make(map[string]remote.Rights, len(specs))
	first := make(map[string]tokenSpec, len(specs))
	for _, spec := range specs {
		tok, rights, ok := strings.Cut(spec.text, "=")
		if !ok || tok == "" || rights == "" {
			// Without "=" the whole spec is most likely the token: the
			// error, which goes to stderr and logs, masks it as the
			// others do.
			return nil, fmt.Errorf("%s=%s: want TOKEN=RIGHTS, e.g. s3cret=produce,consume", spec.label(tok), spec.shown(rights))
		}
		if strings.TrimSpace(tok) != tok {
			// "tok = produce" in a file: a token no client would send, as
			// its white space is trimmed from the header it travels in.
			return nil, fmt.Errorf("%s=...: the token begins or ends with white space", spec.label(tok))
		}
		if strings.IndexFunc(tok, unsendable) >= 0 {
			// A gRPC or HTTP header carries printable ASCII only.
			return nil, fmt.Errorf("%s=...: the token holds a character other than printable ASCII, which gRPC and HTTP clients cannot send", spec.label(tok))
		}
		if prev, dup := first[tok]; dup {
			if prev.file == "" && spec.file == "" {
				return nil, fmt.Errorf("--token: the same token is given twice")
			}
			return nil, fmt.Errorf("%s: the same token is given twice (first at %s)", spec.where(), prev.where())
		}
		first[tok] = spec
		rights, _, _ = strings.Cut(rights, "@")
		r, err := parseRights(rights)
		if err != nil && spec.file != "" {
			// The unknown right may be a secret (see tokenSpec.shown):
			// the error names its line instead.
			return nil, fmt.Errorf("%s=...: an unknown right: use produce, consume, admin or all, separated by commas", spec.label(tok))
		}
		if err != nil {
			return nil, fmt.Errorf("%s=...: %w", spec.label(tok), err)
		}
		out[tok] = r
	}
	return out, nil
}

// parseFrom reads latest, earliest or an RFC 3339 time.
func parseFrom(s string) (equeue.ConsumeFrom, time.Time, error) {
	switch s {
	case "latest", "":
		return equeue.ConsumeFromLatest, time.Time{}, nil
	case "earliest":
		return equeue.ConsumeFromEarliest, time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("%q: use latest, earliest or an RFC 3339 time such as 2026-01-02T15:04:05Z", s)
	}
	return equeue.ConsumeFromTimestamp, t, nil
}

// parseProperty reads k=v.
func parseProperty(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", "", fmt.Errorf("--property %q: want KEY=VALUE", s)
	}
	return k, v, nil
}

// parseQueueOffset reads TOPIC/QUEUE=OFFSET.
func parseQueueOffset(s string) (equeue.QueueRef, int64, error) {
	bad := fmt.Errorf("--offset %q: want TOPIC/QUEUE=OFFSET, e.g. orders/0=42", s)
	ref, off, ok := strings.Cut(s, "=")
	if !ok {
		return equeue.QueueRef{}, 0, bad
	}
	i := strings.LastIndexByte(ref, '/')
	if i <= 0 {
		return equeue.QueueRef{}, 0, bad
	}
	q, err := strconv.Atoi(ref[i+1:])
	if err != nil || q < 0 {
		return equeue.QueueRef{}, 0, bad
	}
	n, err := strconv.ParseInt(off, 10, 64)
	if err != nil || n < 0 {
		return equeue.QueueRef{}, 0, bad
	}
	return equeue.QueueRef{Topic: ref[:i], Queue: q}, n, nil
}

// unsendable reports whether r cannot travel in a token's header: gRPC
// metadata and HTTP header values carry printable ASCII.
func unsendable(r rune) bool { return r < 0x20 || r > 0x7e }
