package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestTopic_LimitsCreateSetDescribe(t *testing.T) {
	t.Parallel()
	dir := "--dir=" + t.TempDir()
	ok(t, dir, "topic", "create", "jobs", "--queues", "1", "--max-messages", "2", "--overflow", "reject", "--default-ttl", "1h")
	desc := ok(t, dir, "topic", "describe", "jobs")
	if !strings.Contains(desc, "limits:   max-messages=2 overflow=reject default-ttl=1h0m0s") {
		t.Fatalf("describe does not show the limits:\n%s", desc)
	}
	ti := decode[topicJSON](t, ok(t, dir, "topic", "describe", "jobs", "--json"))
	if ti.Limits == nil || ti.Limits.MaxMessages != 2 || ti.Limits.Overflow != "reject" || ti.Limits.DefaultTTL != "1h0m0s" {
		t.Fatalf("describe --json limits: %+v", ti.Limits)
	}
	ok(t, dir, "produce", "jobs", "a", "b")
	fails(t, 1, "topic full", dir, "produce", "jobs", "c")

	// Drop-oldest keeps the newest two.
	ok(t, dir, "topic", "set-limits", "jobs", "--max-messages", "2")
	ok(t, dir, "produce", "jobs", "c")
	ti = decode[topicJSON](t, ok(t, dir, "topic", "describe", "jobs", "--json"))
	if ti.Messages != 2 || ti.Queues[0].MinOffset != 1 {
		t.Fatalf("after drop-oldest: %+v", ti)
	}

	// No flags clear the limits; describe then has no limits line.
	ok(t, dir, "topic", "set-limits", "jobs")
	if desc := ok(t, dir, "topic", "describe", "jobs"); strings.Contains(desc, "limits:") {
		t.Fatalf("limits still shown after clearing:\n%s", desc)
	}
	fails(t, 2, "--overflow", dir, "topic", "create", "x", "--max-messages", "1", "--overflow", "drop-newest")
	fails(t, 2, "negative", dir, "topic", "set-limits", "jobs", "--max-messages", "-1")
	fails(t, 1, "topic not found", dir, "topic", "set-limits", "nope", "--max-messages", "1")
}

func TestServe_NamespacedTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, maddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--metrics", maddr,
		"--token", "ta=all@tenant-a", "--token", "tb=all@tenant-b", "--token", "ops=all")
	eventually(t, 20*time.Second, "serve's /healthz", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		code, _, err := httpGet("http://" + maddr + "/healthz")
		return err == nil && code == http.StatusOK
	})
	a := []string{"--server", addr, "--token", "ta"}
	b := []string{"--server", addr, "--token", "tb"}
	ok(t, append(a, "topic", "create", "orders", "--queues", "1", "--max-messages", "5", "--overflow", "reject")...)
	ok(t, append(b, "topic", "create", "orders", "--queues", "2")...)
	ok(t, append(a, "produce", "orders", "from-a")...)
	ok(t, append(b, "produce", "orders", "from-b1", "from-b2")...)

	la := decode[[]topicJSON](t, ok(t, append(a, "topic", "list", "--json")...))
	if len(la) != 1 || la[0].Name != "orders" || la[0].Messages != 1 || la[0].Limits == nil || la[0].Limits.MaxMessages != 5 {
		t.Fatalf("tenant-a's topics: %+v", la)
	}
	lb := decode[[]topicJSON](t, ok(t, append(b, "topic", "list", "--json")...))
	if len(lb) != 1 || lb[0].Messages != 2 || lb[0].Limits != nil {
		t.Fatalf("tenant-b's topics: %+v", lb)
	}
	all := ok(t, "--server", addr, "--token", "ops", "topic", "list")
	for _, want := range []string{"tenant-a:orders", "tenant-b:orders"} {
		if !strings.Contains(all, want) {
			t.Fatalf("the whole-engine token does not see %s:\n%s", want, all)
		}
	}
	// Another tenant's name, qualified in this one, is no name a topic can
	// have: refused as the produce is, whatever the engine holds.
	fails(t, 2, "invalid name", append(a, "topic", "describe", "tenant-b:orders")...)
	fails(t, 2, "invalid name", append(a, "produce", "tenant-b:orders", "x")...)

	bad := startServe(t, "--dir", t.TempDir(), "--listen", freePort(t), "--token", "x=all@bad:ns")
	select {
	case <-bad.done:
	case <-time.After(20 * time.Second):
		t.Fatal("serve with a bad namespace did not exit")
	}
	if !strings.Contains(bad.stderr.String(), "namespace") {
		t.Fatalf("serve's error does not name the namespace:\n%s", bad.stderr)
	}
	if srv.stop(t) != 0 {
		t.Fatalf("serve exited badly:\n%s", srv.stderr)
	}
}
