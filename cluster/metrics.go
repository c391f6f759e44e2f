package cluster

import (
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports a node's Raft state as Prometheus metrics. Register it
// beside the engine's collector (package metrics; attach the engine with
// Options.OnEngine).
type Collector struct {
	n *Node

	state, term, commit, applied, lastLog, firstLog, serving *prometheus.Desc
	failed, leaseHeld                                        *prometheus.Desc
	applyLag, lastContact, leaderChanges, tenures, snapshots *prometheus.Desc
	followerLag, followerAnswer                              *prometheus.Desc
}

// NewCollector returns a collector of n's metrics.
func NewCollector(n *Node) *Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("equeue_cluster_"+name, help, labels, prometheus.Labels{"node": n.ID()})
	}
	return &Collector{n: n,
		state:         d("raft_state", "1 for the node's current Raft state.", "state"),
		term:          d("term", "Current Raft term."),
		commit:        d("commit_index", "Highest log index known committed."),
		applied:       d("applied_index", "Highest log index applied to the store."),
		lastLog:       d("last_log_index", "Last index in the node's Raft log."),
		firstLog:      d("first_log_index", "First index in the node's Raft log (earlier ones are in a snapshot)."),
		serving:       d("serving", "1 while the node serves an engine as leader."),
		leaseHeld:     d("lease_held", "1 while the leader holds its lease and so serves calls (a majority answered it recently)."),
		failed:        d("failed", "1 once the node left the cluster because its Raft log failed a write (reopen it)."),
		applyLag:      d("apply_lag_entries", "Committed entries not yet applied to the store (a follower's lag)."),
		lastContact:   d("last_contact_seconds", "Seconds since a follower last heard from the leader."),
		leaderChanges: d("leader_changes_total", "Leader changes observed by the node."),
		tenures:       d("tenures_total", "Engines opened by this node as leader."),
		snapshots:     d("snapshots_installed_total", "Snapshots installed into the node's store."),
		followerLag: d("follower_lag_entries",
			"On the leader: entries of its log a follower lacks, as of the follower's last answer.", "follower"),
		followerAnswer: d("follower_last_answer_seconds",
			"On the leader: seconds since a follower last answered it (absent when it never did).", "follower"),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.state, c.term, c.commit, c.applied, c.lastLog, c.firstLog, c.serving, c.leaseHeld, c.failed,
		c.applyLag, c.lastContact, c.leaderChanges, c.tenures, c.snapshots, c.followerLag, c.followerAnswer} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.n.Status()
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	cnt := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	for _, st := range []raft.RaftState{raft.Follower, raft.Candidate, raft.Leader, raft.Shutdown} {
		v := 0.0
		if st.String() == s.State {
			v = 1
		}
		g(c.state, v, st.String())
	}
	g(c.term, float64(s.Term))
	g(c.commit, float64(s.CommitIndex))
	g(c.applied, float64(s.AppliedIndex))
	g(c.lastLog, float64(s.LastLogIndex))
	g(c.firstLog, float64(s.FirstLogIndex))
	serving := 0.0
	if s.Serving {
		serving = 1
	}
	g(c.serving, serving)
	held := 0.0
	if s.LeaseHeld {
		held = 1
	}
	g(c.leaseHeld, held)
	failed := 0.0
	if s.Failure != "" {
		failed = 1
	}
	g(c.failed, failed)
	lag := 0.0
	if s.CommitIndex > s.AppliedIndex {
		lag = float64(s.CommitIndex - s.AppliedIndex)
	}
	g(c.applyLag, lag)
	if !s.LastContact.IsZero() && s.State != raft.Leader.String() {
		g(c.lastContact, time.Since(s.LastContact).Seconds())
	}
	for _, f := range c.n.FollowerLags() {
		g(c.followerLag, float64(f.Entries), f.ID)
		if !f.LastAnswer.IsZero() {
			g(c.followerAnswer, time.Since(f.LastAnswer).Seconds(), f.ID)
		}
	}
	cnt(c.leaderChanges, s.LeaderChanges)
	cnt(c.tenures, s.Tenures)
	cnt(c.snapshots, s.SnapshotsInstalled)
}
