package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// clusterNode is one "equeue serve --cluster-id" process.
type clusterNode struct {
	id, dir, listen, raft, admin string
	srv                          *server
}

func startClusterNode(t *testing.T, base, id string, bootstrap bool, extra ...string) *clusterNode {
	n := &clusterNode{id: id, dir: filepath.Join(base, id), listen: freePort(t), raft: freePort(t), admin: freePort(t)}
	args := []string{"--dir", n.dir, "--listen", n.listen, "--cluster-id", id, "--cluster-raft", n.raft, "--cluster-admin", n.admin}
	if bootstrap {
		args = append(args, "--cluster-bootstrap")
	}
	n.srv = startServe(t, append(args, extra...)...)
	return n
}

type statusJSON struct {
	ID, State, LeaderID, LeaderAddr string
	Term                            uint64
	LeaderKafkaAddr                 string
	Serving                         bool
	Servers                         []struct{ ID string }
}

func (n *clusterNode) status(t *testing.T) (statusJSON, bool) {
	r := cli(t, "cluster", "status", "--json", "--admin", n.admin)
	var s statusJSON
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &s) != nil {
		return s, false
	}
	return s, true
}

// onNode runs a command through --server node, the node the test talks
// to as the cluster's leader, as ok does. Right after a cluster forms, an
// election or a lapse of the leader's lease on a loaded machine makes the
// node refuse for a moment (exit 1, "not the cluster leader": nothing was
// done): the command is run again, for up to a minute. After an answer of
// unknown outcome, or one that the node was not reached, it is run again
// too, and took says whether a failed run shows that an earlier one took
// effect; took nil: such an answer ends the test, as any other failure.
func onNode(t *testing.T, node string, took func(r result) bool, args ...string) string {
	t.Helper()
	args = append([]string{"--server", node}, args...)
	deadline := time.Now().Add(time.Minute)
	unknown := false
	for {
		r := cli(t, args...)
		switch {
		case r.code == 0:
			return r.stdout
		case r.code != 1:
			t.Fatalf("equeue %s: %v", strings.Join(args, " "), r)
		case unknown && took(r):
			return r.stdout
		case took != nil && (strings.Contains(r.stderr, "outcome unknown") || strings.Contains(r.stderr, `is "equeue serve" running there?`)):
			unknown = true
		case strings.Contains(r.stderr, "not the cluster leader") && !strings.Contains(r.stderr, "outcome unknown"):
		default:
			t.Fatalf("equeue %s: %v", strings.Join(args, " "), r)
		}
		if time.Now().After(deadline) {
			t.Fatalf("equeue %s: refused by %s for a minute: %v", strings.Join(args, " "), node, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createTopicOn creates topic name with flags through --server node, as
// onNode runs a command: "already exists", after an answer of unknown
// outcome, means that the earlier creation took effect.
func createTopicOn(t *testing.T, node, name string, flags ...string) {
	t.Helper()
	onNode(t, node, func(r result) bool { return strings.Contains(r.stderr, "topic already exists") },
		append([]string{"topic", "create", name}, flags...)...)
}

// lead makes n the serving leader of nodes: the leader that n's status
// names is asked to hand the leadership over to n (cluster
// transfer-leadership). An election's answers (the node asked no longer
// leads, another transfer is under way, the target did not win within the
// election timeout) are asked again, for up to a minute; any other
// failure ends the test.
func lead(t *testing.T, n *clusterNode, nodes ...*clusterNode) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s, ok := n.status(t)
		if ok && s.Serving {
			return
		}
		for _, l := range nodes {
			if !ok || l.id != s.LeaderID || l == n {
				continue
			}
			r := cli(t, "cluster", "transfer-leadership", n.id, "--admin", l.admin)
			if r.code != 0 && (r.code != 1 || !electionAnswer(r.stderr)) {
				t.Fatalf("hand the leadership over from %s to %s: %v", l.id, n.id, r)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not lead within a minute: %+v", n.id, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// electionAnswer reports whether stderr says that a change was refused
// for an election or a leadership transfer under way: nothing was done.
func electionAnswer(stderr string) bool {
	return strings.Contains(stderr, "not the cluster leader") ||
		strings.Contains(stderr, "leadership transfer in progress") ||
		strings.Contains(stderr, "leadership transfer timeout")
}

// throughLeader runs the command args(round) through --server n.listen
// once n leads (lead). When n stopped leading before it answered (exit 1,
// "not the cluster leader", or "outcome unknown": an election cut in), n
// is made leader again and the command runs again in a new round, up to
// five: args makes each round's command safe to run after an earlier one
// (a consume in a group of its own). Any other failure ends the test.
func throughLeader(t *testing.T, n *clusterNode, nodes []*clusterNode, args func(round int) []string) string {
	t.Helper()
	for round := 1; ; round++ {
		lead(t, n, nodes...)
		a := append([]string{"--server", n.listen}, args(round)...)
		r := cli(t, a...)
		switch {
		case r.code == 0:
			return r.stdout
		case r.code != 1 || !strings.Contains(r.stderr, "not the cluster leader") && !strings.Contains(r.stderr, "outcome unknown"):
			t.Fatalf("equeue %s: %v", strings.Join(a, " "), r)
		case round == 5:
			t.Fatalf("equeue %s: an election cut into every round: %v", strings.Join(a, " "), r)
		}
	}
}

func TestCluster_ServeAddProduceTransferRemove(t *testing.T) {
	base := t.TempDir()
	n1 := startClusterNode(t, base, "n1", true)
	eventually(t, 60*time.Second, "n1 leads", func() bool {
		s, ok := n1.status(t)
		return ok && s.Serving
	})
	n2 := startClusterNode(t, base, "n2", false)
	n3 := startClusterNode(t, base, "n3", false)
	for _, n := range []*clusterNode{n2, n3} {
		if out := ok(t, "cluster", "add", n.id, n.raft, "--admin", n1.admin); !strings.Contains(out, "added "+n.id) {
			t.Fatalf("add said %q", out)
		}
	}
	eventually(t, 60*time.Second, "n3 sees three voters and the leader", func() bool {
		lead(t, n1, n1, n2, n3) // again when an election moved the leadership
		s, ok := n3.status(t)
		return ok && len(s.Servers) == 3 && s.LeaderID == "n1" && s.LeaderAddr == n1.listen
	})
	// A change asked of a follower is refused and names the leader.
	fails(t, 1, "not the cluster leader", "cluster", "remove", "n1", "--admin", n2.admin)
	// An ID the configuration does not hold is refused, not "removed".
	fails(t, 1, "no server with this ID", "cluster", "remove", "n9", "--admin", n1.admin)

	createTopicOn(t, n1.listen, "orders", "--queues", "2")
	onNode(t, n1.listen, nil, "produce", "orders", "hello")
	// A follower refuses clients and names the leader: n2 asked while it
	// follows n1 in one term, as its status says before and after the
	// call (one leader a term); a round an election cut into is made
	// again, with n1 leading again.
	for round := 1; ; round++ {
		if round > 5 {
			t.Fatal("an election cut into every round")
		}
		lead(t, n1, n1, n2, n3)
		before, ok1 := n2.status(t)
		r := cli(t, "--server", n2.listen, "topic", "list")
		after, ok2 := n2.status(t)
		if !ok1 || !ok2 || before.State != "Follower" || before.LeaderID != "n1" || after.LeaderID != "n1" || after.Term != before.Term {
			continue
		}
		if r.code != 1 || !strings.Contains(r.stderr, n1.listen) {
			t.Fatalf("a follower of n1 asked for topics: want exit 1 and %q on stderr, got %v", n1.listen, r)
		}
		break
	}

	// --server with several nodes follows the leader.
	all := n2.listen + "," + n3.listen + "," + n1.listen
	ok(t, "--server", all, "produce", "orders", "world")

	ok(t, "cluster", "transfer-leadership", "n2", "--admin", n1.admin)
	eventually(t, 60*time.Second, "n2 leads", func() bool {
		s, ok := n2.status(t)
		return ok && s.Serving
	})
	out := ok(t, "--server", all, "consume", "orders", "--from", "earliest", "--count", "2")
	if !strings.Contains(out, "hello") || !strings.Contains(out, "world") {
		t.Fatalf("consume on the new leader said %q", out)
	}
	ok(t, "cluster", "remove", "n3", "--admin", n2.admin)
	eventually(t, 60*time.Second, "two voters left", func() bool {
		s, ok := n2.status(t)
		return ok && len(s.Servers) == 2
	})
	for _, n := range []*clusterNode{n3, n1, n2} {
		if code := n.srv.stop(t); code != 0 {
			t.Fatalf("%s exited %d:\n%s", n.id, code, n.srv.stderr)
		}
	}
}

func TestCluster_AdminNeedsAServerToken(t *testing.T) {
	base := t.TempDir()
	n := &clusterNode{id: "n1", dir: filepath.Join(base, "n1"), listen: freePort(t), raft: freePort(t), admin: freePort(t)}
	n.srv = startServe(t, "--dir", n.dir, "--listen", n.listen, "--cluster-id", "n1", "--cluster-raft", n.raft,
		"--cluster-admin", n.admin, "--cluster-bootstrap", "--token", "ops=all", "--token", "app=consume",
		"--cluster-log-store", "wal", "--cluster-secret-file", writeSecret(t, base, "secret"))
	eventually(t, 60*time.Second, "n1 leads", func() bool {
		r := cli(t, "cluster", "status", "--json", "--admin", n.admin, "--token", "ops")
		var s statusJSON
		return r.code == 0 && json.Unmarshal([]byte(r.stdout), &s) == nil && s.Serving
	})
	fails(t, 1, "bearer token", "cluster", "status", "--admin", n.admin)
	fails(t, 1, "bearer token", "cluster", "status", "--admin", n.admin, "--token", "nope")
	ok(t, "cluster", "status", "--admin", n.admin, "--token", "app")
	fails(t, 1, "may not change", "cluster", "transfer-leadership", "--admin", n.admin, "--token", "app")
	// The admin token passes the guard; a lone node has no one to hand over to.
	r := cli(t, "cluster", "transfer-leadership", "--admin", n.admin, "--token", "ops")
	if strings.Contains(r.stderr, "may not change") || strings.Contains(r.stderr, "bearer token") {
		t.Fatalf("the admin token was refused: %s", r.stderr)
	}
	if code := n.srv.stop(t); code != 0 {
		t.Fatalf("exited %d:\n%s", code, n.srv.stderr)
	}
	// --cluster-log-store wal keeps the Raft log in raft-wal's segments.
	if _, err := os.Stat(filepath.Join(n.dir, "raft", "wal")); err != nil {
		t.Fatalf("no raft-wal log: %v", err)
	}
	if _, err := os.Stat(filepath.Join(n.dir, "raft", "raft.db")); err == nil {
		t.Fatal("a bolt log was created too")
	}
}

// In cluster mode the console and the Kafka listener serve through the node.
func TestCluster_ServeWithTheConsoleAndKafka(t *testing.T) {
	base := t.TempDir()
	caddr, kaddr := freePort(t), freePort(t)
	n := &clusterNode{id: "n1", dir: filepath.Join(base, "n1"), listen: freePort(t), raft: freePort(t), admin: freePort(t)}
	n.srv = startServe(t, "--dir", n.dir, "--listen", n.listen, "--cluster-id", "n1", "--cluster-raft", n.raft,
		"--cluster-admin", n.admin, "--cluster-bootstrap", "--console", caddr, "--kafka", kaddr)
	eventually(t, 60*time.Second, "n1 leads", func() bool {
		s, ok := n.status(t)
		return ok && s.Serving
	})
	ok(t, "--server", n.listen, "topic", "create", "orders", "--queues", "2")
	ok(t, "--server", n.listen, "produce", "orders", "hello")
	eventually(t, 20*time.Second, "the console shows the topic", func() bool {
		code, b, err := httpGet("http://" + caddr + "/topics/orders")
		return err == nil && code == http.StatusOK && strings.Contains(b, "<h1>orders")
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc, err := kgo.NewClient(kgo.SeedBrokers(kaddr), kgo.DefaultProduceTopic("orders"), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	if err := kc.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("via kafka")}).FirstErr(); err != nil {
		t.Fatalf("produce through the Kafka listener: %v", err)
	}
	out := ok(t, "--server", n.listen, "consume", "orders", "--from", "earliest", "--count", "2")
	if !strings.Contains(out, "hello") || !strings.Contains(out, "via kafka") {
		t.Fatalf("consume said %q", out)
	}
	if code := n.srv.stop(t); code != 0 {
		t.Fatalf("exited %d:\n%s", code, n.srv.stderr)
	}
}

// A Kafka client that knows only a follower's listener is sent to the
// leader's and produces there: each node tells the others, through its
// tenure entry, where its Kafka listener is.
func TestCluster_KafkaClientOfAFollowerReachesTheLeader(t *testing.T) {
	base := t.TempDir()
	k1, k2 := freePort(t), freePort(t)
	n1 := startClusterNode(t, base, "n1", true, "--kafka", k1)
	eventually(t, 60*time.Second, "n1 leads", func() bool {
		s, ok := n1.status(t)
		return ok && s.Serving
	})
	n2 := startClusterNode(t, base, "n2", false, "--kafka", k2)
	ok(t, "cluster", "add", n2.id, n2.raft, "--admin", n1.admin)
	eventually(t, 60*time.Second, "n2 follows n1", func() bool {
		lead(t, n1, n1, n2) // again when an election moved the leadership
		s, ok := n2.status(t)
		return ok && s.LeaderID == "n1" && s.LeaderAddr == n1.listen && s.LeaderKafkaAddr == k1
	})
	if out := ok(t, "cluster", "status", "--admin", n2.admin); !strings.Contains(out, "leader's Kafka listener:  "+k1) {
		t.Fatalf("status said %q", out)
	}
	createTopicOn(t, n1.listen, "orders", "--queues", "2")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc, err := kgo.NewClient(kgo.SeedBrokers(k2), kgo.DefaultProduceTopic("orders"), kgo.RetryTimeout(30*time.Second),
		kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	if err := kc.ProduceSync(ctx, &kgo.Record{Value: []byte("sent to a follower")}).FirstErr(); err != nil {
		t.Fatalf("produce through the follower's Kafka listener: %v", err)
	}
	// Read back on n1, led again when an election moved the leadership.
	out := throughLeader(t, n1, []*clusterNode{n1, n2}, func(round int) []string {
		return []string{"consume", "orders", "--group", fmt.Sprintf("check%d", round), "--from", "earliest", "--count", "1"}
	})
	if !strings.Contains(out, "sent to a follower") {
		t.Fatalf("consume said %q", out)
	}
	for _, n := range []*clusterNode{n2, n1} {
		if code := n.srv.stop(t); code != 0 {
			t.Fatalf("%s exited %d:\n%s", n.id, code, n.srv.stderr)
		}
	}
}

// In cluster mode the Kafka listener's address is told to other nodes'
// clients, so it must name a host and a port.
func TestCluster_KafkaNeedsAnAddressToAdvertise(t *testing.T) {
	dir := t.TempDir()
	for _, kafka := range []string{":9092", "0.0.0.0:9092", "127.0.0.1:0"} {
		fails(t, exitUsage, "--kafka-advertise", "serve", "--dir", dir, "--listen", "127.0.0.1:0",
			"--cluster-id", "n1", "--cluster-raft", "127.0.0.1:0", "--cluster-bootstrap", "--kafka", kafka)
	}
}

// Cluster options the node refuses come from the command line: a usage
// error (exit 2), as the README promises for a wrong command line.
func TestCluster_RefusedClusterFlagsAreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		want  string
		flags []string
	}{
		{"must name a host other nodes can dial", []string{"--cluster-raft", "0.0.0.0:7751"}},
		{`--cluster-raft "127.0.0.1": want HOST:PORT`, []string{"--cluster-raft", "127.0.0.1"}},
		{"want \"bolt\" or \"wal\"", []string{"--cluster-raft", "127.0.0.1:0", "--cluster-log-store", "ssd"}},
		{"Peers that include this node", []string{"--cluster-raft", "127.0.0.1:0", "--cluster-bootstrap", "--cluster-peers", "n2=127.0.0.1:7752"}},
	} {
		args := append([]string{"serve", "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--cluster-id", "n1"}, tc.flags...)
		fails(t, exitUsage, tc.want, args...)
	}
}

// A node records itself under --cluster-raft as given: a host name (a DNS
// name whose address changes when the node restarts) stays the name in
// the cluster's configuration, which the other nodes dial; before, serve
// gave the address its listener resolved the name to.
func TestCluster_RecordsTheRaftHostNameAsGiven(t *testing.T) {
	port := freePort(t)
	raftName := "localhost" + port[strings.LastIndex(port, ":"):]
	n := &clusterNode{id: "n1", dir: filepath.Join(t.TempDir(), "n1"), listen: freePort(t), raft: raftName, admin: freePort(t)}
	n.srv = startServe(t, "--dir", n.dir, "--listen", n.listen, "--cluster-id", n.id, "--cluster-raft", n.raft,
		"--cluster-admin", n.admin, "--cluster-bootstrap")
	var servers []struct{ ID, RaftAddr string }
	eventually(t, 60*time.Second, "n1 leads", func() bool {
		r := cli(t, "cluster", "status", "--json", "--admin", n.admin)
		var s struct {
			Serving bool
			Servers []struct{ ID, RaftAddr string }
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &s) != nil || !s.Serving {
			return false
		}
		servers = s.Servers
		return true
	})
	if len(servers) != 1 || servers[0].RaftAddr != raftName {
		t.Fatalf("the configuration holds %+v, want n1 at %s", servers, raftName)
	}
	if code := n.srv.stop(t); code != 0 {
		t.Fatalf("n1 exited %d:\n%s", code, n.srv.stderr)
	}
}
