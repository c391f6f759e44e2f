package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTopic_PrioritiesCreateProduceDescribe(t *testing.T) {
	t.Parallel()
	dir := "--dir=" + t.TempDir()
	out := ok(t, dir, "topic", "create", "tasks", "--queues", "2", "--priorities", "3")
	if !strings.Contains(out, "created topic tasks with 2 queues of 3 priority lanes") {
		t.Fatalf("create: %s", out)
	}
	// One key: one queue, in the lanes of the priorities asked.
	ok(t, dir, "produce", "tasks", "low", "--key", "k")
	ok(t, dir, "produce", "tasks", "mid-1", "mid-2", "--key", "k", "--priority", "1")
	high := ok(t, dir, "produce", "tasks", "high", "--key", "k", "--priority", "9") // above the top: the top lane
	ti := decode[topicJSON](t, ok(t, dir, "topic", "describe", "tasks", "--json"))
	if ti.Priorities != 3 || len(ti.Queues) != 6 {
		t.Fatalf("describe --json: %+v", ti)
	}
	perLane := map[int]int64{}
	for _, q := range ti.Queues {
		if q.Queue == nil || q.Lane == nil || *q.Queue != q.ID/3 || *q.Lane != q.ID%3 {
			t.Fatalf("queue ID %d is not placed as queue %d lane %d: %+v", q.ID, q.ID/3, q.ID%3, q)
		}
		perLane[*q.Lane] += q.Messages
	}
	if perLane[0] != 1 || perLane[1] != 2 || perLane[2] != 1 {
		t.Fatalf("messages per lane: %v", perLane)
	}
	var topQueue string
	for _, q := range ti.Queues {
		if *q.Lane == 2 && q.Messages == 1 {
			topQueue = "queue=" + strconv.Itoa(q.ID) + " "
		}
	}
	if !strings.HasPrefix(high, topQueue) {
		t.Fatalf("produce --priority 9 printed %q, want the top lane's queue ID (%s)", high, topQueue)
	}
	desc := ok(t, dir, "topic", "describe", "tasks")
	for _, want := range []string{"priorities: 3 lanes per queue", "QUEUE ID", "LANE"} {
		if !strings.Contains(desc, want) {
			t.Fatalf("describe does not show %q:\n%s", want, desc)
		}
	}
	if plain := ok(t, dir, "topic", "create", "plain", "--queues", "1"); strings.Contains(plain, "lanes") {
		t.Fatalf("a plain topic has no lanes: %s", plain)
	}
	if desc := ok(t, dir, "topic", "describe", "plain"); strings.Contains(desc, "priorities") || strings.Contains(desc, "LANE") {
		t.Fatalf("a plain topic is described without lanes:\n%s", desc)
	}
	fails(t, 2, "--priorities 1", dir, "topic", "create", "x", "--priorities", "1")
	fails(t, 2, "--priorities 17", dir, "topic", "create", "x", "--priorities", "17")
	fails(t, 2, "--priority", dir, "produce", "tasks", "x", "--priority", "-1")
}

func TestTopic_MaxBytesAndUnconsumed(t *testing.T) {
	t.Parallel()
	dir := "--dir=" + t.TempDir()
	ok(t, dir, "topic", "create", "blobs", "--queues", "1", "--max-bytes", "400", "--overflow", "reject", "--unconsumed", "keep")
	desc := ok(t, dir, "topic", "describe", "blobs")
	if !strings.Contains(desc, "limits:   max-bytes=400 overflow=reject unconsumed=keep") {
		t.Fatalf("describe does not show the limits:\n%s", desc)
	}
	ti := decode[topicJSON](t, ok(t, dir, "topic", "describe", "blobs", "--json"))
	if ti.Limits == nil || ti.Limits.MaxBytes != 400 || ti.Limits.Overflow != "reject" || ti.Limits.Unconsumed != "keep" {
		t.Fatalf("describe --json limits: %+v", ti.Limits)
	}
	fails(t, 1, "topic full", dir, "produce", "blobs", strings.Repeat("x", 401))
	ok(t, dir, "produce", "blobs", "small")
	ok(t, dir, "topic", "set-limits", "blobs", "--max-bytes", "1000000", "--unconsumed", "drop")
	if desc := ok(t, dir, "topic", "describe", "blobs"); !strings.Contains(desc, "max-bytes=1000000 overflow=drop-oldest unconsumed=drop") {
		t.Fatalf("set-limits did not replace the limits:\n%s", desc)
	}
	fails(t, 2, "--unconsumed", dir, "topic", "set-limits", "blobs", "--unconsumed", "sometimes")
	fails(t, 2, "--max-bytes -1: must not be negative", dir, "topic", "set-limits", "blobs", "--max-bytes", "-1")
}

// TestServe_MaxBytesOverRemote: a topic's byte limit set through a server
// is stored, described and enforced.
func TestServe_MaxBytesOverRemote(t *testing.T) {
	t.Parallel()
	addr, maddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", t.TempDir(), "--listen", addr, "--metrics", maddr)
	eventually(t, 20*time.Second, "serve's /healthz", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		code, _, err := httpGet("http://" + maddr + "/healthz")
		return err == nil && code == http.StatusOK
	})
	s := []string{"--server", addr}
	ok(t, append(s, "topic", "create", "blobs", "--queues", "1", "--max-bytes", "300", "--overflow", "reject", "--priorities", "2")...)
	ti := decode[topicJSON](t, ok(t, append(s, "topic", "describe", "blobs", "--json")...))
	if ti.Limits == nil || ti.Limits.MaxBytes != 300 || ti.Priorities != 2 {
		t.Fatalf("describe over remote: %+v %+v", ti, ti.Limits)
	}
	ok(t, append(s, "produce", "blobs", "first", "--priority", "1")...)
	fails(t, 1, "topic full", append(s, "produce", "blobs", strings.Repeat("y", 300))...)
	if srv.stop(t) != 0 {
		t.Fatalf("serve exited badly:\n%s", srv.stderr)
	}
}

// TestDLQ_ListShowsPriority: dlq list showed where a dead letter came from
// (topic/queue:offset) but not the priority lane it was stored in, which
// ListDeadLetters reports; its table and its JSON now show it, in process
// and through a server.
func TestDLQ_ListShowsPriority(t *testing.T) {
	forCLITransports(t, func(t *testing.T, _ string, at []string) {
		run := func(args ...string) string { return ok(t, append(append([]string{}, at...), args...)...) }
		run("topic", "create", "tasks", "--queues", "1", "--priorities", "3")
		run("produce", "tasks", "bad-high", "--priority", "2")
		run("produce", "tasks", "bad-low")
		r := cli(t, append(append([]string{}, at...), "consume", "tasks", "--group", "workers", "--from", "earliest",
			"--dead-letter-if", "body~bad", "--reason", "refused", "--count", "2")...)
		require.Equal(t, 0, r.code, "consume: %v", r)

		dls := decode[[]deadLetterJSON](t, run("dlq", "list", "workers", "--json"))
		require.Len(t, dls, 2)
		lanes := map[string]int{}
		for _, dl := range dls {
			lanes[dl.Message.Body] = dl.Priority
		}
		assert.Equal(t, map[string]int{"bad-high": 2, "bad-low": 0}, lanes)

		out := run("dlq", "list", "workers")
		assert.Contains(t, out, "PRIORITY")
		for _, l := range strings.Split(out, "\n") {
			switch {
			case strings.Contains(l, "bad-high"):
				assert.Equal(t, "2", strings.Fields(l)[2], "the lane, after FROM: %q", l)
			case strings.Contains(l, "bad-low"):
				assert.Equal(t, "0", strings.Fields(l)[2], "the lane, after FROM: %q", l)
			}
		}
	})
}

// TestMessageJSON_ShowsPriority: the JSON form of a message (consume and
// peek --output json, the "message" of dlq list --json) had no priority,
// though a received message carries the lane it was stored in; it now has
// one, in process and through a server.
func TestMessageJSON_ShowsPriority(t *testing.T) {
	forCLITransports(t, func(t *testing.T, _ string, at []string) {
		run := func(args ...string) string { return ok(t, append(append([]string{}, at...), args...)...) }
		run("topic", "create", "tasks", "--queues", "1", "--priorities", "3")
		run("produce", "tasks", "high", "--priority", "2")
		run("produce", "tasks", "low")
		// lanes reads each message's priority by its body, from raw JSON so
		// that a missing field fails rather than reading as 0.
		lanes := func(msgs []map[string]any) map[string]any {
			got := map[string]any{}
			for _, m := range msgs {
				got[m["body"].(string)] = m["priority"]
			}
			return got
		}
		want := map[string]any{"high": float64(2), "low": float64(0)}

		assert.Equal(t, want, lanes(jsonLines[map[string]any](t, run("peek", "tasks", "--output", "json"))), "peek")
		r := cli(t, append(append([]string{}, at...), "consume", "tasks", "--group", "workers", "--from", "earliest",
			"--count", "2", "--output", "json", "--timeout", "20s")...)
		require.Equal(t, 0, r.code, "consume: %v", r)
		assert.Equal(t, want, lanes(jsonLines[map[string]any](t, r.stdout)), "consume")

		r = cli(t, append(append([]string{}, at...), "consume", "tasks", "--group", "dead", "--from", "earliest",
			"--dead-letter-if", "*", "--reason", "refused", "--count", "2")...)
		require.Equal(t, 0, r.code, "consume: %v", r)
		var dls []map[string]any
		for _, dl := range decode[[]map[string]any](t, run("dlq", "list", "dead", "--json")) {
			dls = append(dls, dl["message"].(map[string]any))
		}
		assert.Equal(t, want, lanes(dls), "dlq list")
	})
}

// TestPeek_JSONWithAConsumeToken: a token with only the consume right
// cannot read the topic's lane count (an admin call), but peeks each
// message with its lane all the same: the pull answer carries it.
func TestPeek_JSONWithAConsumeToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "tasks", "--queues", "1", "--priorities", "3")
	ok(t, "--dir", dir, "produce", "tasks", "high", "--priority", "2")
	addr := freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--token", "ops=admin,consume", "--token", "reader=consume")
	eventually(t, 20*time.Second, "serve answers", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		return cli(t, "--server", addr, "--token", "ops", "topic", "list").code == 0
	})
	t.Cleanup(func() { srv.stop(t) })

	for token, lane := range map[string]float64{"ops": 2, "reader": 2} {
		msgs := jsonLines[map[string]any](t, ok(t, "--server", addr, "--token", token, "peek", "tasks", "--output", "json"))
		require.Len(t, msgs, 1, token)
		assert.Equal(t, lane, msgs[0]["priority"], token)
	}
}
