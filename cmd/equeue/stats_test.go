package main

import (
	"strings"
	"testing"
	"time"
)

// TestStats_EngineCounters: stats shows the IDs a dedup window holds, on a
// directory and of a served broker, and a served broker's counters since
// it started.
func TestStats_EngineCounters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "d", "--queues", "1", "--dedup-window", "10m")
	for _, id := range []string{"a", "b", "c", "a"} {
		ok(t, "--dir", dir, "produce", "d", "body-"+id, "--id", id)
	}
	st := decode[statsJSON](t, ok(t, "--dir", dir, "stats", "--json"))
	if st.Engine == nil || st.Engine.DedupIDs != 3 || st.Messages != 3 {
		t.Fatalf("stats --dir: %+v (engine %+v)", st, st.Engine)
	}
	if out := ok(t, "--dir", dir, "stats"); !strings.Contains(out, "dedup IDs held:") || strings.Contains(out, "no-space refusals:") {
		t.Fatalf("stats --dir: %q", out)
	}

	addr := freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr)
	eventually(t, 20*time.Second, "serve answers", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		return cli(t, "--server", addr, "topic", "list").code == 0
	})
	ok(t, "--server", addr, "produce", "d", "body-e", "--id", "e")
	st = decode[statsJSON](t, ok(t, "--server", addr, "stats", "--json"))
	if st.Engine == nil || st.Engine.DedupIDs != 4 || st.StoreBytes == nil || *st.StoreBytes <= 0 {
		t.Fatalf("stats --server: %+v (engine %+v)", st, st.Engine)
	}
	out := ok(t, "--server", addr, "stats")
	for _, want := range []string{"dedup IDs held:", "corrupt records seen:", "expired messages seen:", "no-space refusals:"} {
		if !strings.Contains(out, want) {
			t.Fatalf("stats --server: no %q in %q", want, out)
		}
	}
	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
}
