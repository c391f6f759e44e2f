package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/internal/testport"
)

// A removal whose caller stops waiting before Raft answers still ends the
// removed server's part in the leader's lease: once the change is made,
// the leader serves on with the voters left. Counting the removed server,
// which no longer answers, a leader of two voters lost its lease for good
// and refused every call.
func TestNode_RemovalWhoseCallerLeftStillLeavesTheLease(t *testing.T) {
	c := newCluster(t, 2, nil)
	ctx := t.Context()
	c.createTopic(t, "t", 1)
	li := c.leaderIndex()
	leader, other := c.nodes[li], c.id(1-li)

	gone, cancel := context.WithCancel(ctx)
	cancel() // the caller stops waiting at once; Raft still makes the change
	_ = leader.RemoveServer(gone, other)
	eventually(t, 10*time.Second, func() error {
		if s := leader.Status().Servers; len(s) != 1 {
			return fmt.Errorf("servers %v", s)
		}
		return nil
	})
	c.stop(1 - li) // the removed node answers no more
	// Past its last answer's part in a lease (nine tenths of the
	// heartbeat timeout, 500 ms here).
	time.Sleep(500 * time.Millisecond)
	eventually(t, 5*time.Second, func() error {
		_, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("a")}}})
		return err
	})
	require.True(t, leader.Status().LeaseHeld)
}

// Removing a server the configuration does not hold (a mistyped ID) is
// refused as an invalid argument, and changes nothing: it reported
// success, as if the server had left.
func TestNode_RemovingAnUnknownServerIsRefused(t *testing.T) {
	c := newCluster(t, 1, nil)
	leader := c.waitLeader()
	before := leader.Status().LastLogIndex
	err := leader.RemoveServer(t.Context(), "n9")
	require.ErrorIs(t, err, cluster.ErrUnknownServer)
	require.ErrorIs(t, err, equeue.ErrInvalidArgument)
	require.Equal(t, before, leader.Status().LastLogIndex, "no configuration entry for a refused removal")
	require.ErrorIs(t, leader.TransferLeadership(t.Context(), "n9"), cluster.ErrUnknownServer)

	srv := httptest.NewServer(cluster.AdminHandler(leader))
	defer srv.Close()
	res, err := http.Post(srv.URL+"/cluster/remove?id=n9", "", nil)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
}

// AddVoter refuses, as an invalid argument and before it changes the
// configuration, a node ID or Raft address Open would refuse in Options
// (an empty or overlong ID, one with a control character or not in UTF-8;
// an address that is not HOST:PORT naming a
// host other nodes can dial, with a port from 1) and an address another
// server of the configuration has. Before, such an address was added as a
// non-voter that Raft dialed in vain until AddVoter's context ended (5
// minutes over the admin API, which then answered 500), or Raft refused
// it as an internal error.
func TestNode_AddVoterRefusesAMalformedIDOrAddress(t *testing.T) {
	c := newCluster(t, 1, nil)
	leader := c.waitLeader()
	before := leader.Status().LastLogIndex
	free := testport.Addr(t)
	for _, tc := range []struct{ id, addr string }{
		{"n2", "no-port"},
		{"n2", "127.0.0.1:port"},
		{"n2", ":" + strings.Split(free, ":")[1]},
		{"n2", "0.0.0.0:7000"},
		{"n2", "127.0.0.1:0"},
		{"n2", "127.0.0.1:70000"},
		{"n2", " " + free},
		{"", free},
		{strings.Repeat("n", 256), free},
		{"n2\n", free},
		{"n2\x1b[2J", free},
		{"n2\xff", free},
		{"n2", c.addrs[0]}, // the leader's own address, under another ID
	} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		err := leader.AddVoter(ctx, tc.id, tc.addr)
		cancel()
		require.ErrorIs(t, err, equeue.ErrInvalidArgument, "AddVoter(%.20q, %q)", tc.id, tc.addr)
	}
	require.Equal(t, before, leader.Status().LastLogIndex, "a configuration entry for a refused addition")
	require.Len(t, leader.Status().Servers, 1)

	srv := httptest.NewServer(cluster.AdminHandler(leader))
	defer srv.Close()
	for _, q := range []string{"id=n2&raft=no-port", "id=n2%0A&raft=127.0.0.1%3A0", "id=n2", "raft=" + free} {
		res, err := http.Post(srv.URL+"/cluster/add?"+q, "", nil)
		require.NoError(t, err)
		_ = res.Body.Close()
		require.Equal(t, http.StatusBadRequest, res.StatusCode, "add?%s", q)
	}
}

// A removal that would leave voters of which fewer than a majority answer
// the leader is refused (ErrWouldLoseQuorum, 409 over the admin API), and
// the cluster goes on serving: with one of three voters down, removing
// the leader itself or the other follower that answers left two voters,
// one of them down, which can elect no leader. Before, Raft took such a
// removal: the leader stepped down, and the cluster stayed without a
// leader until the stopped node came back. Removing the voter that is
// down is taken.
func TestNode_RemovalThatLeavesNoMajorityIsRefused(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.createTopic(t, "t", 1)
	li := c.leaderIndex()
	leader := c.nodes[li]
	down, up := (li+1)%3, (li+2)%3
	c.stop(down)
	// Past the time its last answer counts it as answering (two leases,
	// of nine tenths of the heartbeat timeout each).
	time.Sleep(time.Second)

	for _, id := range []string{leader.ID(), c.id(up)} {
		err := leader.RemoveServer(t.Context(), id)
		require.ErrorIs(t, err, cluster.ErrWouldLoseQuorum, "remove %s", id)
	}
	srv := httptest.NewServer(cluster.AdminHandler(leader))
	defer srv.Close()
	res, err := http.Post(srv.URL+"/cluster/remove?id="+leader.ID(), "", nil)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusConflict, res.StatusCode)
	s := leader.Status()
	require.Equal(t, "Leader", s.State)
	require.Len(t, s.Servers, 3)
	eventually(t, 10*time.Second, func() error {
		_, err := leader.Append(t.Context(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("a")}}})
		return err
	})

	require.NoError(t, leader.RemoveServer(t.Context(), c.id(down)))
	require.Len(t, leader.Status().Servers, 2)
	_, err = leader.Append(t.Context(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("b")}}})
	require.NoError(t, err)
}

// Two removals asked at once are checked one after the other: each is
// checked against the configuration the other left. With one of four
// voters down, removing the two other followers at once passed both
// checks against the four voters (each alone leaves three, two of them
// answering), and together left the leader and the voter that is down,
// which elect no leader. Now one of them is refused.
func TestNode_ConcurrentRemovalsAreCheckedOneAfterTheOther(t *testing.T) {
	c := newCluster(t, 4, nil)
	c.createTopic(t, "t", 1)
	li := c.leaderIndex()
	leader := c.nodes[li]
	var others []string
	for i := range c.nodes {
		if i != li {
			others = append(others, c.id(i))
		}
	}
	for i := range c.nodes {
		if c.id(i) == others[0] {
			c.stop(i)
		}
	}
	time.Sleep(time.Second) // past two leases: the stopped voter no longer answers

	errs := make([]error, 2)
	var wg sync.WaitGroup
	for j, id := range others[1:] {
		wg.Go(func() { errs[j] = leader.RemoveServer(t.Context(), id) })
	}
	wg.Wait()
	refused := 0
	for _, err := range errs {
		if err != nil {
			require.ErrorIs(t, err, cluster.ErrWouldLoseQuorum)
			refused++
		}
	}
	require.Equal(t, 1, refused, "removals %v", errs)
	require.Len(t, leader.Status().Servers, 3)
	eventually(t, 10*time.Second, func() error {
		_, err := leader.Append(t.Context(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("a")}}})
		return err
	})
}
