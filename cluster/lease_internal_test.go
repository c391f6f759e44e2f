package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func voters(ids ...raft.ServerID) raft.Configuration {
	var cf raft.Configuration
	for _, id := range ids {
		cf.Servers = append(cf.Servers, raft.Server{ID: id, Suffrage: raft.Voter})
	}
	return cf
}

// The lease is held while a majority of the voters, the leader counted,
// answered calls of the current term sent within the lease.
func TestLease_MajorityOfFreshAnswers(t *testing.T) {
	now := time.Unix(1000, 0)
	l := leaseState{length: 250 * time.Millisecond}
	answers := map[raft.ServerID]answeredCall{}
	answered := func(id raft.ServerID) (answeredCall, bool) {
		c, ok := answers[id]
		return c, ok
	}
	held := func() bool { return l.held("a", 7, now, answered) }

	assert.False(t, held(), "no configuration known yet")
	l.setVoters(voters("a", "b", "c"))
	assert.False(t, held(), "no follower answered")
	answers["b"] = answeredCall{at: now.Add(-300 * time.Millisecond), term: 7}
	assert.False(t, held(), "b's answer is older than the lease")
	answers["b"] = answeredCall{at: now.Add(-100 * time.Millisecond), term: 6}
	assert.False(t, held(), "b answered in an earlier term")
	answers["b"] = answeredCall{at: now.Add(-100 * time.Millisecond), term: 7}
	assert.True(t, held(), "a and b of three")

	l.transferring.Store(true)
	assert.False(t, held(), "no lease while the leadership is handed over")
	l.transferring.Store(false)

	// A transfer that ended (failed, or timed out here while its target
	// won out of sight) leaves no lease from answers to calls sent before
	// its end: b may have voted for the target since.
	l.transfers.Add(1)
	assert.False(t, held(), "no lease while a transfer is under way")
	l.transferEnded(now.Add(-50 * time.Millisecond))
	l.transfers.Add(-1)
	assert.False(t, held(), "b's answer is to a call sent before the transfer ended")
	answers["b"] = answeredCall{at: now.Add(-40 * time.Millisecond), term: 7}
	assert.True(t, held(), "b answered a call sent after the transfer ended")
	answers["b"] = answeredCall{at: now.Add(-55 * time.Millisecond), term: 7}
	l.transferEnded(now.Add(-60 * time.Millisecond))
	assert.False(t, held(), "an earlier end does not move the bound back")
	answers["b"] = answeredCall{at: now.Add(-40 * time.Millisecond), term: 7}

	// A voter being added counts before its change commits: 2 of 4 is
	// not a majority.
	l.addVoter("d")
	assert.False(t, held())
	answers["d"] = answeredCall{at: now.Add(-10 * time.Millisecond), term: 7}
	assert.True(t, held(), "a, b and d of four")
	l.addVoter("d")
	assert.Len(t, *l.voters.Load(), 4, "adding a voter twice counts it once")

	// Non-voters never count.
	cf := voters("a", "b")
	cf.Servers = append(cf.Servers, raft.Server{ID: "c", Suffrage: raft.Nonvoter}, raft.Server{ID: "d", Suffrage: raft.Nonvoter})
	l.setVoters(cf)
	assert.True(t, held(), "a and b of two voters")
	delete(answers, "b")
	assert.False(t, held(), "a alone of two voters")

	l.setVoters(voters("a"))
	assert.True(t, held(), "a single voter always holds it")
}

// The transport notes the answers that carry the lease: a successful
// answer in the call's term, through a plain call or the pipeline.
func TestLease_TransportNotesSuccessfulAnswers(t *testing.T) {
	answer := make(chan *raft.AppendEntriesResponse, 8)
	follower := testFollower(t, func(*raft.AppendEntriesRequest) *raft.AppendEntriesResponse { return <-answer })
	leader := testLeader(t)
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}, Term: 3}

	answer <- &raft.AppendEntriesResponse{Term: 3, Success: false}
	require.NoError(t, leader.AppendEntries("f", follower.LocalAddr(), req, &raft.AppendEntriesResponse{}))
	_, ok := leader.answered("f")
	assert.False(t, ok, "a refusal carries no lease")

	answer <- &raft.AppendEntriesResponse{Term: 4, Success: true}
	require.NoError(t, leader.AppendEntries("f", follower.LocalAddr(), req, &raft.AppendEntriesResponse{}))
	_, ok = leader.answered("f")
	assert.False(t, ok, "an answer in a newer term carries no lease")

	before := time.Now()
	answer <- &raft.AppendEntriesResponse{Term: 3, Success: true}
	require.NoError(t, leader.AppendEntries("f", follower.LocalAddr(), req, &raft.AppendEntriesResponse{}))
	c, ok := leader.answered("f")
	require.True(t, ok)
	assert.EqualValues(t, 3, c.term)
	assert.False(t, c.at.Before(before), "the lease counts from the send")

	p, err := leader.AppendEntriesPipeline("f", follower.LocalAddr())
	require.NoError(t, err)
	defer p.Close()
	before = time.Now()
	answer <- &raft.AppendEntriesResponse{Term: 3, Success: true}
	_, err = p.AppendEntries(req, &raft.AppendEntriesResponse{})
	require.NoError(t, err)
	f := <-p.Consumer()
	require.NoError(t, f.Error())
	c, _ = leader.answered("f")
	assert.False(t, c.at.Before(before), "a pipelined answer renews the lease")
}
