package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"
)

// The listener of a secure stream logs the handshakes it refuses, at warn,
// with the dialler's address and a reason an operator acts on (a node
// with another secret, one of another version, one too slow, or none of
// these). A node that keeps retrying, or a flood, must not flood the log:
// at most refusalBurst lines of each reason per refusalWindow, and past
// them the first line of each address with none in the window yet, for
// up to refusalBurst more addresses (refusallines.go); the next line of a
// reason logged says how many of that reason were left out meanwhile.
// Each reason has its own lines, so that a flood of connections that are
// no equeue nodes does not hide the one line saying that a node holds
// another secret, and a flood of wrong proofs from one address (or a few)
// does not hide that of a node elsewhere.
const (
	refusalWindow = 10 * time.Second
	refusalBurst  = 10
)

// The reasons a refused handshake is logged with.
const (
	reasonWrongSecret = "wrong secret"
	// reasonBareProof is a bare proof of a node of equeue-raft/2 that
	// does not verify: another secret, or random bytes.
	reasonBareProof  = "unverified bare proof"
	reasonMalformed  = "malformed hello"
	reasonBadVersion = "bad version"
	reasonTimeout    = "timeout"
	reasonOther      = "failed handshake"
)

// errWrongProof is the error of a connection whose other end sent a proof
// that does not match: it holds another secret, or another salt.
var errWrongProof = fmt.Errorf("%w: its proof does not match (another secret, or another cluster salt?)", errRaftProof)

// refusalLog logs refused handshakes, rate-limited per reason.
type refusalLog struct {
	log     atomic.Pointer[slog.Logger] // nil: silent
	now     func() time.Time
	windows map[string]*reasonLines // per reason; set at start, then only read
}

func newRefusalLog() *refusalLog {
	r := &refusalLog{now: time.Now, windows: map[string]*reasonLines{}}
	for _, reason := range []string{reasonWrongSecret, reasonBareProof, reasonMalformed, reasonBadVersion, reasonTimeout, reasonOther} {
		r.windows[reason] = &reasonLines{}
	}
	return r
}

// setLogger makes refusals go to log from now on.
func (r *refusalLog) setLogger(log *slog.Logger) { r.log.Store(log) }

// refused logs the handshake with remote refused with err, unless this
// window's lines of its reason are used up (reasonLines).
func (r *refusalLog) refused(remote net.Addr, err error) {
	log := r.log.Load()
	if log == nil {
		return
	}
	reason := refusalReason(err)
	ok, left := r.windows[reason].allow(r.now(), refusalSource(remote))
	if !ok {
		return
	}
	addr := "unknown"
	if remote != nil {
		addr = remote.String()
	}
	attrs := []any{"remote", addr, "reason", reason, "err", err}
	if left > 0 {
		attrs = append(attrs, "suppressed", left)
	}
	log.Warn("cluster: refused a Raft connection", attrs...)
}

// refusalReason is the reason a handshake that failed with err is logged
// with.
func refusalReason(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, errMalformedHello):
		// Before a timeout: part of a hello's header, then nothing until
		// the deadline, is a malformed hello.
		return reasonMalformed
	case errors.As(err, &ne) && ne.Timeout():
		return reasonTimeout
	case errors.Is(err, errRaftVersion):
		return reasonBadVersion
	case errors.Is(err, errWrongBareProof):
		return reasonBareProof
	case errors.Is(err, errWrongProof):
		return reasonWrongSecret
	}
	return reasonOther
}

// setLogger makes the stream log the handshakes it refuses to log (nil:
// silent, as it is until a node opened on it sets its logger).
func (s *secureStream) setLogger(log *slog.Logger) { s.refusals.setLogger(log) }
