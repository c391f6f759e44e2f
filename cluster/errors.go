package cluster

import (
	"errors"
	"fmt"

	"github.com/equeue-go/equeue"
)

// NotLeaderError is returned by a node that does not lead (or is between
// tenures): nothing was done. It matches equeue.ErrNotLeader. LeaderAddr is
// the leader's client address when the node knows it.
type NotLeaderError struct {
	LeaderID   string // the leader's node ID ("" when unknown)
	LeaderAddr string // the leader's client address ("" when unknown)
}

// Error names the leader when the node knows it.
func (e *NotLeaderError) Error() string {
	if e.LeaderAddr == "" {
		return fmt.Sprintf("%v (leader unknown)", equeue.ErrNotLeader)
	}
	return fmt.Sprintf("%v (leader %s at %s)", equeue.ErrNotLeader, e.LeaderID, e.LeaderAddr)
}

// Is makes errors.Is(err, equeue.ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == equeue.ErrNotLeader }

// Leader returns the leader's client address, "" when unknown. Package
// remote sends it to clients, which follow it.
func (e *NotLeaderError) Leader() string { return e.LeaderAddr }

// ErrUnknownServer is returned by RemoveServer and TransferLeadership for
// a node ID the cluster's configuration does not hold: nothing was done.
// It matches equeue.ErrInvalidArgument.
var ErrUnknownServer = fmt.Errorf("%w: no server with this ID in the cluster's configuration", equeue.ErrInvalidArgument)

// ErrWouldLoseQuorum is returned by RemoveServer when the voters the
// removal leaves are not a majority of voters that answer the leader (one
// is down or cut off): the configuration could commit nothing more, not
// even the removal, and the cluster would have no leader until enough of
// them came back. Nothing was done. Remove the voter that does not
// answer first, or bring it back.
var ErrWouldLoseQuorum = errors.New("cluster: the voters left would not be a majority that answers the leader")

// ErrNotCaughtUp is returned by AddVoter when the node it adds did not
// catch up with the leader's log before the caller's context ended (or
// within 5 minutes, when it has no deadline): the node was removed again,
// or the error says that removing it failed. The error matches the
// context's error too. The node may be down, or its Raft address one the
// leader cannot reach.
var ErrNotCaughtUp = errors.New("cluster: the node did not catch up with the leader's log in time")

// ErrPeerAuthFailed is matched by AddVoter's error, with ErrNotCaughtUp,
// when the node it adds did not catch up and the node refused the
// handshake of the leader's last Raft connection to it since AddVoter
// began (secure stream, NewSecureStream): it said it refused the leader's
// proof (it holds another cluster secret, or another salt:
// NewSaltedSecureStream), or it does not speak this
// version of the handshake. A connection closed or timed out before the
// node answered the proof is no refusal.
var ErrPeerAuthFailed = errors.New("cluster: the node refused the leader's Raft handshake (another cluster secret or salt, or another version of equeue's handshake)")
