package remote

import (
	"slices"
	"time"

	"github.com/equeue-go/equeue"
)

// maxLearnedAddrs bounds the addresses a ClusterClient keeps beside those
// given to DialCluster: leader addresses learned from the nodes' answers.
// Past it, the learned address least recently named the leader is
// forgotten (never the leader's).
const maxLearnedAddrs = 8

// unreachableForget is how long a learned address may go without an
// answer, its calls failing as unreachable, before a ClusterClient
// forgets it; a node that names it the leader later makes it known again.
// A variable so that tests can shorten it.
var unreachableForget = time.Minute

// node is a ClusterClient's client of one node's address. Calls hold it
// from acquire to release: a node forgotten while calls use it is closed
// once the last of them is done.
type node struct {
	addr string
	c    *Client
	// learned is set for an address a node's answer named, not given to
	// DialCluster: only those are forgotten.
	learned bool
	// calls counts the calls using c (acquire to release).
	calls int
	// used orders the learned nodes by when they were last dialed or
	// named the leader (ClusterClient.uses then).
	used uint64
	// failingSince is when c's calls began to fail as unreachable, zero
	// while it answers.
	failingSince time.Time
	// forgotten is set once the node is no longer the ClusterClient's.
	forgotten bool
}

// acquire returns the node of addr, dialing it the first time, for a call
// that releases it when done with its client.
func (cc *ClusterClient) acquire(addr string) (*node, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.closed.Load() {
		return nil, equeue.ErrClosed
	}
	n := cc.clients[addr]
	if n == nil {
		c, err := dial(addr, &cc.opts, cc.runners)
		if err != nil {
			return nil, err
		}
		n = &node{addr: addr, c: c, learned: !slices.Contains(cc.addrs[:cc.given], addr)}
		cc.clients[addr] = n
		if n.learned {
			cc.addrs = append(cc.addrs, addr)
			cc.uses++
			n.used = cc.uses
			cc.trimLearned(n)
		}
	}
	n.calls++
	return n, nil
}

// release ends a call's use of n (see acquire).
func (cc *ClusterClient) release(n *node) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	n.calls--
	if n.forgotten && n.calls == 0 {
		cc.retire(n)
	}
}

// named records that an answer named addr the leader. Called with cc.mu
// held.
func (cc *ClusterClient) named(addr string) {
	if n := cc.clients[addr]; n != nil {
		cc.uses++
		n.used = cc.uses
	}
}

// answered records that n's node answered a call.
func (cc *ClusterClient) answered(n *node) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	n.failingSince = time.Time{}
}

// unreachable records that a call could not reach n's node: a learned
// address that has not answered for unreachableForget, and is not taken
// for the leader's, is forgotten.
func (cc *ClusterClient) unreachable(n *node) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	now := time.Now()
	if n.failingSince.IsZero() {
		n.failingSince = now
	}
	if n.learned && !n.forgotten && cc.leader != n.addr && now.Sub(n.failingSince) >= unreachableForget {
		cc.forget(n)
	}
}

// trimLearned forgets the learned nodes least recently used, but keep and
// the leader's, until at most maxLearnedAddrs are left. Called with cc.mu
// held.
func (cc *ClusterClient) trimLearned(keep *node) {
	for len(cc.addrs)-cc.given > maxLearnedAddrs {
		var oldest *node
		for _, a := range cc.addrs[cc.given:] {
			n := cc.clients[a]
			if n == nil || n == keep || a == cc.leader {
				continue
			}
			if oldest == nil || n.used < oldest.used {
				oldest = n
			}
		}
		if oldest == nil {
			return
		}
		cc.forget(oldest)
	}
}

// forget drops n from the client: its address leaves the round robin, and
// its client is closed once no call uses it. Called with cc.mu held.
func (cc *ClusterClient) forget(n *node) {
	n.forgotten = true
	delete(cc.clients, n.addr)
	cc.addrs = slices.DeleteFunc(cc.addrs, func(a string) bool { return a == n.addr })
	if cc.leader == n.addr {
		cc.leader = ""
	}
	if n.calls == 0 {
		cc.retire(n)
		return
	}
	cc.retiring[n] = struct{}{}
}

// retire closes the client of n, forgotten and no longer used, on a
// goroutine of its own (closing waits for its stream reader, which may be
// the caller), which Close waits for. Once Close has begun, Close closes
// it. Called with cc.mu held.
func (cc *ClusterClient) retire(n *node) {
	delete(cc.retiring, n)
	if cc.closed.Load() {
		return
	}
	cc.closing.Add(1)
	go func() {
		defer cc.closing.Done()
		_ = n.c.Close() // the node is no longer the client's: nobody to tell
	}()
}
