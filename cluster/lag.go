package cluster

import (
	"io"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Follower progress as the leader sees it. Raft keeps each follower's
// match index to itself, but every answer to an AppendEntries call —
// heartbeats included, which the leader sends each follower every tenth of
// the heartbeat timeout — carries the follower's last log index. The
// node's Raft transport is wrapped to note it per follower; the lag is the
// leader's last log index minus it.

// progressTransport is the node's Raft transport, noting what followers
// answer. Embedding keeps the transport's optional capabilities
// (pre-vote, close) visible to Raft.
type progressTransport struct {
	*raft.NetworkTransport
	// clamp bounds the commit index sent to followers (leaderlog.go); set
	// before Raft starts.
	clamp func(commit uint64) uint64
	// relay hands Raft the calls this node receives (commitbound.go).
	relay commitRelay

	mu    sync.Mutex
	peers map[raft.ServerID]peerProgress
	// sent is, per follower, the latest call it answered with success in
	// the call's own term: when it was sent, and that term (lease.go).
	sent map[raft.ServerID]answeredCall
	// matched is, per follower, the last index a call it answered with
	// success proved its log holds as the leader's does; refused, the
	// refusal of a node of another cluster (clusterid.go), of entries or
	// of a snapshot. AddVoter
	// watches both.
	matched map[raft.ServerID]uint64
	refused map[raft.ServerID]error
}

// answeredCall is a call a follower answered with success.
type answeredCall struct {
	at   time.Time // when it was sent
	term uint64
}

// peerProgress is what a follower last answered.
type peerProgress struct {
	lastLog uint64    // the follower's last log index after the call
	at      time.Time // when it answered
}

func newProgressTransport(t *raft.NetworkTransport) *progressTransport {
	return &progressTransport{NetworkTransport: t, peers: map[raft.ServerID]peerProgress{}, sent: map[raft.ServerID]answeredCall{},
		matched: map[raft.ServerID]uint64{}, refused: map[raft.ServerID]error{}}
}

// AppendEntries sends the call and notes the follower's answer.
func (t *progressTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	t.clampCommit(args)
	start := time.Now()
	err := t.NetworkTransport.AppendEntries(id, target, args, resp)
	if err != nil {
		t.noteRefusal(id, err)
		return err
	}
	last := resp.LastLog // the follower's last index before this call
	if resp.Success && len(args.Entries) > 0 {
		last = max(last, args.PrevLogEntry+uint64(len(args.Entries)))
	}
	t.mu.Lock()
	t.peers[id] = peerProgress{lastLog: last, at: time.Now()}
	t.noteAnswerLocked(id, start, args, resp)
	t.mu.Unlock()
	return nil
}

// InstallSnapshot sends the snapshot and notes a refusal of a node of
// another cluster (clusterid.go): a node whose log ends before the
// leader's log begins is sent a snapshot, not entries, and AddVoter must
// see it refused as it sees refused entries.
func (t *progressTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	err := t.NetworkTransport.InstallSnapshot(id, target, args, resp, data)
	if err != nil {
		t.noteRefusal(id, err)
	}
	return err
}

// noteRefusal records err, a call to id that failed, when it is the
// refusal of a node of another cluster.
func (t *progressTransport) noteRefusal(id raft.ServerID, err error) {
	// Either refusal carries ErrForeignCluster's text: the follower's
	// (its relay refused the call's entries or snapshot: commitbound.go),
	// which the transport gives as text only, or this node's own dial's,
	// whose hello the node there answered with another cluster's ID
	// (hello.go), which never reached the follower.
	if !strings.Contains(err.Error(), ErrForeignCluster.Error()) {
		return
	}
	t.mu.Lock()
	t.refused[id] = err
	t.mu.Unlock()
}

// noteAnswer records, for the lease, when a call id answered with success
// in the call's own term was sent.
func (t *progressTransport) noteAnswer(id raft.ServerID, start time.Time, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) {
	t.mu.Lock()
	t.noteAnswerLocked(id, start, args, resp)
	t.mu.Unlock()
}

func (t *progressTransport) noteAnswerLocked(id raft.ServerID, start time.Time, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) {
	if resp.Success {
		proved := args.PrevLogEntry
		if n := len(args.Entries); n > 0 {
			proved = args.Entries[n-1].Index
		}
		t.matched[id] = max(t.matched[id], proved)
	}
	if !resp.Success || resp.Term != args.Term {
		return
	}
	if c := t.sent[id]; args.Term > c.term || args.Term == c.term && start.After(c.at) {
		t.sent[id] = answeredCall{at: start, term: args.Term}
	}
}

// answered returns the latest call id answered with success; ok is false
// when it never answered one.
func (t *progressTransport) answered(id raft.ServerID) (c answeredCall, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok = t.sent[id]
	return c, ok
}

// catchUp returns the last index id's answers proved its log holds as the
// leader's does, and the refusal of id when it is a node of another
// cluster.
func (t *progressTransport) catchUp(id raft.ServerID) (matched uint64, refused error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.matched[id], t.refused[id]
}

// forgetCatchUp forgets what catchUp returns of id.
func (t *progressTransport) forgetCatchUp(id raft.ServerID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.matched, id)
	delete(t.refused, id)
}

// keepOnly forgets what it noted of the servers cf does not hold: removed
// servers, of which a leader that lives through many membership changes
// (replaced machines, each under a new node ID) would otherwise keep an
// entry each for as long as it runs. An answer to a call that was under
// way when its server was removed may note it again; the next pruning
// (Node.pruneFollowers) forgets it.
func (t *progressTransport) keepOnly(cf raft.Configuration) {
	in := make(map[raft.ServerID]bool, len(cf.Servers))
	for _, s := range cf.Servers {
		in[s.ID] = true
	}
	gone := func(id raft.ServerID) bool { return !in[id] }
	t.mu.Lock()
	defer t.mu.Unlock()
	maps.DeleteFunc(t.peers, func(id raft.ServerID, _ peerProgress) bool { return gone(id) })
	maps.DeleteFunc(t.sent, func(id raft.ServerID, _ answeredCall) bool { return gone(id) })
	maps.DeleteFunc(t.matched, func(id raft.ServerID, _ uint64) bool { return gone(id) })
	maps.DeleteFunc(t.refused, func(id raft.ServerID, _ error) bool { return gone(id) })
}

// progress returns what id last answered; ok is false when it never did.
func (t *progressTransport) progress(id raft.ServerID) (p peerProgress, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok = t.peers[id]
	return p, ok
}

// FollowerLag is one follower's replication progress, as its leader sees
// it.
type FollowerLag struct {
	ID string // the follower's node ID
	// LastLogIndex is the follower's last log index, as of its last answer
	// to the leader (0 when it never answered this node).
	LastLogIndex uint64
	// Entries is how many entries of the leader's log the follower lacks:
	// the leader's last log index minus LastLogIndex.
	Entries uint64
	// LastAnswer is when the follower last answered the leader (zero when
	// it never did).
	LastAnswer time.Time
}

// FollowerLags returns each other server's replication lag while this node
// leads, and nil otherwise.
func (n *Node) FollowerLags() []FollowerLag {
	if n.raft.State() != raft.Leader {
		return nil
	}
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return nil
	}
	last := n.raft.LastIndex()
	var out []FollowerLag
	for _, s := range cf.Configuration().Servers {
		if string(s.ID) == n.opts.ID {
			continue
		}
		f := FollowerLag{ID: string(s.ID), Entries: last}
		if p, ok := n.ptrans.progress(s.ID); ok {
			f.LastLogIndex, f.LastAnswer = p.lastLog, p.at
			f.Entries = 0
			if last > p.lastLog {
				f.Entries = last - p.lastLog
			}
		}
		out = append(out, f)
	}
	return out
}
