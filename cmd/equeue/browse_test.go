package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// forCLITransports runs the test body against a directory opened by each command
// and against "equeue serve" on that directory.
func forCLITransports(t *testing.T, test func(t *testing.T, dir string, at []string)) {
	t.Run("dir", func(t *testing.T) {
		dir := t.TempDir()
		test(t, dir, []string{"--dir", dir})
	})
	t.Run("server", func(t *testing.T) {
		dir := t.TempDir()
		ok(t, "--dir", dir, "topic", "create", "boot", "--queues", "1")
		addr := freePort(t)
		srv := startServe(t, "--dir", dir, "--listen", addr)
		eventually(t, 20*time.Second, "serve listening", func() bool {
			if srv.exited() {
				t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
			}
			return cli(t, "--server", addr, "topic", "list").code == 0
		})
		t.Cleanup(func() { srv.stop(t) })
		test(t, dir, []string{"--server", addr})
	})
}

func TestPeek_BrowsesWithoutAGroup(t *testing.T) {
	forCLITransports(t, func(t *testing.T, _ string, at []string) {
		run := func(args ...string) string { return ok(t, append(append([]string{}, at...), args...)...) }
		run("topic", "create", "orders", "--queues", "2")
		run("produce", "orders", "a0", "a1", "a2", "--key", "k1")
		run("produce", "orders", "b0", "--key", "k2")
		mid := time.Now().UTC()
		run("produce", "orders", "a3", "a4", "--key", "k1")

		all := jsonLines[messageJSON](t, run("peek", "orders", "--output", "json", "--max", "100"))
		if got := strings.Join(sortedBodies(all), ","); got != "a0,a1,a2,a3,a4,b0" {
			t.Fatalf("peek of every queue: %s", got)
		}
		q := all[0].Queue
		for _, m := range all {
			if m.Keys[0] == "k1" {
				q = m.Queue
			}
		}
		page := jsonLines[messageJSON](t, run("peek", "orders", "--queue", strconv.Itoa(q), "--offset", "1", "--max", "2", "--output", "json"))
		if got := strings.Join(bodies(page), ","); got != "a1,a2" {
			t.Fatalf("peek --offset 1 --max 2: %s", got)
		}
		byTime := jsonLines[messageJSON](t, run("peek", "orders", "--queue", strconv.Itoa(q), "--time", mid.Format(time.RFC3339Nano), "--output", "json"))
		if got := strings.Join(bodies(byTime), ","); got != "a3,a4" {
			t.Fatalf("peek --time: %s", got)
		}
		byKey := jsonLines[messageJSON](t, run("peek", "orders", "--key", "k2", "--output", "json"))
		if got := strings.Join(bodies(byKey), ","); got != "b0" {
			t.Fatalf("peek --key k2: %s", got)
		}
		// Browsing made no group.
		if out := run("groups"); !strings.Contains(out, "no consumer groups") {
			t.Fatalf("peek joined a group: %s", out)
		}
		fails(t, 2, "--offset needs --queue", append(append([]string{}, at...), "peek", "orders", "--offset", "1")...)
	})
}

func sortedBodies(msgs []messageJSON) []string {
	b := bodies(msgs)
	slices.Sort(b)
	return b
}

func TestProduce_BodyFileIsOneBinaryMessage(t *testing.T) {
	forCLITransports(t, func(t *testing.T, _ string, at []string) {
		run := func(args ...string) string { return ok(t, append(append([]string{}, at...), args...)...) }
		run("topic", "create", "blobs", "--queues", "1")
		body := []byte("line one\r\n\x00\xff\xfe binary\n\nline after an empty one\n")
		for i := 0; i < 3000; i++ {
			body = append(body, byte(i*7))
		}
		file := filepath.Join(t.TempDir(), "blob.bin")
		if err := os.WriteFile(file, body, 0o600); err != nil {
			t.Fatal(err)
		}
		out := run("produce", "blobs", "--body-file", file)
		if n := strings.Count(out, "offset="); n != 1 {
			t.Fatalf("--body-file sent %d messages: %s", n, out)
		}
		msgs := jsonLines[messageJSON](t, run("peek", "blobs", "--output", "json"))
		if len(msgs) != 1 {
			t.Fatalf("stored %d messages", len(msgs))
		}
		got, err := base64.StdEncoding.DecodeString(msgs[0].BodyBase64)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("body differs (%v): %d bytes stored, %d sent", err, len(got), len(body))
		}
		fails(t, 2, "--body-file is the one message", append(append([]string{}, at...), "produce", "blobs", "x", "--body-file", file)...)
	})
}

func TestConsume_DeadLetterIfAndGroupsDelete(t *testing.T) {
	forCLITransports(t, func(t *testing.T, _ string, at []string) {
		run := func(args ...string) string { return ok(t, append(append([]string{}, at...), args...)...) }
		run("topic", "create", "payments", "--queues", "2")
		run("produce", "payments", "good", "bad-1", "bad-2", "fine")
		r := cli(t, append(append([]string{}, at...), "consume", "payments", "--group", "billing", "--from", "earliest",
			"--dead-letter-if", "body~bad", "--reason", "refused", "--count", "4")...)
		if r.code != 0 || strings.Count(r.stderr, "dead-lettered") != 2 {
			t.Fatalf("consume --dead-letter-if: %v", r)
		}
		dl := decode[[]deadLetterJSON](t, run("dlq", "list", "billing", "--json"))
		if len(dl) != 2 || dl[0].LastError != "dead letter: refused" {
			t.Fatalf("dead letters: %+v", dl)
		}

		// groups delete asks only a terminal: from a pipe, without --yes,
		// it refuses and keeps the group.
		if r := cliIn(t, "n\n", append(append([]string{}, at...), "groups", "delete", "billing")...); r.code != 2 {
			t.Fatalf("declined delete: %v", r)
		}
		run("groups", "billing")
		if out := run("groups", "delete", "billing", "--yes"); !strings.Contains(out, "deleted group billing") {
			t.Fatalf("groups delete: %s", out)
		}
		fails(t, 1, "group not found", append(append([]string{}, at...), "groups", "billing")...)
		if out := run("topic", "list"); strings.Contains(out, "%DLQ%billing") || strings.Contains(out, "%RETRY%billing") {
			t.Fatalf("the group's topics remain: %s", out)
		}
		fails(t, 2, "--dead-letter-if", append(append([]string{}, at...), "consume", "payments", "--dead-letter-if", "nonsense")...)
	})
}
