package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/equeue-go/equeue"
)

func TestTopic_Lifecycle(t *testing.T) {
	t.Parallel()
	dir := "--dir=" + t.TempDir()

	if out := ok(t, dir, "topic", "create", "orders", "--queues", "3"); !strings.Contains(out, "created topic orders with 3 queues") {
		t.Fatalf("create said %q", out)
	}
	ok(t, dir, "topic", "create", "audit")
	fails(t, 1, "already exists", dir, "topic", "create", "orders")

	list := ok(t, dir, "topic", "list")
	for _, want := range []string{"TOPIC", "orders", "audit"} {
		if !strings.Contains(list, want) {
			t.Fatalf("topic list lacks %q:\n%s", want, list)
		}
	}
	topics := decode[[]topicJSON](t, ok(t, dir, "topic", "list", "--json"))
	if len(topics) != 2 || topics[0].Name != "audit" || len(topics[0].Queues) != 4 || topics[1].Name != "orders" || len(topics[1].Queues) != 3 {
		t.Fatalf("topic list --json: %+v", topics)
	}

	desc := ok(t, dir, "topic", "describe", "orders")
	if !strings.Contains(desc, "queues:   3") || !strings.Contains(desc, "WRITABLE") {
		t.Fatalf("describe:\n%s", desc)
	}

	if out := ok(t, dir, "topic", "add-queues", "orders", "2"); !strings.Contains(out, "now has 5 queues") {
		t.Fatalf("add-queues said %q", out)
	}
	ok(t, dir, "topic", "set-writable", "orders", "4", "false")
	ti := decode[topicJSON](t, ok(t, dir, "topic", "describe", "orders", "--json"))
	if len(ti.Queues) != 5 || ti.Queues[4].Writable || !ti.Queues[3].Writable {
		t.Fatalf("describe --json after add-queues and set-writable: %+v", ti)
	}

	audit := decode[topicJSON](t, ok(t, dir, "topic", "describe", "audit", "--json"))
	ok(t, dir, "topic", "delete", "audit", "--yes")
	fails(t, 1, "topic not found", dir, "topic", "describe", "audit")
	topics = decode[[]topicJSON](t, ok(t, dir, "topic", "list", "--json"))
	if len(topics) != 1 || topics[0].Name != "orders" {
		t.Fatalf("after delete: %+v", topics)
	}
	// A topic made again under a deleted one's name has another ID.
	ok(t, dir, "topic", "create", "audit", "--queues", "1")
	again := decode[topicJSON](t, ok(t, dir, "topic", "describe", "audit", "--json"))
	if again.ID == 0 || again.ID == audit.ID || again.ID == ti.ID {
		t.Fatalf("IDs: audit %d, orders %d, audit made again %d", audit.ID, ti.ID, again.ID)
	}
}

func bodies(msgs []messageJSON) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Body
	}
	return out
}

func TestProduceConsume_GroupsAndReset(t *testing.T) {
	t.Parallel()
	dir := "--dir=" + t.TempDir()
	ok(t, dir, "topic", "create", "orders", "--queues", "2")

	// From arguments, with a key, tag and properties: one queue, in order.
	out := ok(t, dir, "produce", "orders", "a1", "a2", "a3", "--key", "k", "--tag", "new", "--property", "src=test", "--property", "n=1")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "queue=") || !strings.Contains(lines[0], " offset=0 id=") {
		t.Fatalf("produce printed %q", out)
	}
	// From standard input (empty lines skipped), as JSON.
	r := cliIn(t, "s1\n\ns2\r\n", dir, "produce", "orders", "--json")
	if r.code != 0 {
		t.Fatal(r)
	}
	sent := jsonLines[sendJSON](t, r.stdout)
	if len(sent) != 2 || sent[0].ID == "" || sent[0].Topic != "orders" {
		t.Fatalf("produce --json: %+v", sent)
	}

	got := jsonLines[messageJSON](t, ok(t, dir, "consume", "orders", "--from", "earliest", "--count", "5", "--output", "json", "--timeout", "20s"))
	if len(got) != 5 {
		t.Fatalf("consumed %d messages: %+v", len(got), got)
	}
	all := bodies(got)
	slices.Sort(all)
	if !slices.Equal(all, []string{"a1", "a2", "a3", "s1", "s2"}) {
		t.Fatalf("bodies %v", all)
	}
	var keyed []messageJSON
	for _, m := range got {
		if strings.HasPrefix(m.Body, "a") {
			keyed = append(keyed, m)
		}
	}
	if b := bodies(keyed); !slices.Equal(b, []string{"a1", "a2", "a3"}) {
		t.Fatalf("keyed messages out of order: %v", b)
	}
	m := keyed[0]
	if m.Tag != "new" || !slices.Equal(m.Keys, []string{"k"}) || m.Properties["src"] != "test" || m.Properties["n"] != "1" ||
		m.ID == "" || m.BornAt.IsZero() || m.StoredAt.IsZero() || m.Attempt != 0 || m.Offset != 0 {
		t.Fatalf("message fields: %+v", m)
	}

	// The group committed everything; two more messages are its lag.
	ok(t, dir, "produce", "orders", "late1", "late2")
	g := decode[groupJSON](t, ok(t, dir, "groups", "equeue-cli", "--json"))
	if g.Lag != 2 || len(g.Members) != 0 || len(g.Queues) != 2 {
		t.Fatalf("group after producing more: %+v", g)
	}
	text := ok(t, dir, "groups")
	if !strings.Contains(text, "group equeue-cli") || !strings.Contains(text, "total lag: 2") || !strings.Contains(text, "COMMITTED") {
		t.Fatalf("groups:\n%s", text)
	}

	// The next consume continues where the last stopped.
	got = jsonLines[messageJSON](t, ok(t, dir, "consume", "orders", "--count", "2", "--output", "json", "--timeout", "20s"))
	if b := bodies(got); len(b) != 2 || !slices.Contains(b, "late1") || !slices.Contains(b, "late2") {
		t.Fatalf("second consume: %v", b)
	}

	// Replay everything.
	out = ok(t, dir, "reset-offsets", "equeue-cli", "--to", "earliest")
	if !strings.Contains(out, "total lag: 7") {
		t.Fatalf("reset-offsets printed:\n%s", out)
	}
	got = jsonLines[messageJSON](t, ok(t, dir, "consume", "orders", "--count", "7", "--output", "json", "--timeout", "20s"))
	if len(got) != 7 {
		t.Fatalf("after reset consumed %d", len(got))
	}

	// One queue, explicitly: replay the keyed messages from the second one.
	q := keyed[0].Queue
	ok(t, dir, "reset-offsets", "equeue-cli", "--offset", fmt.Sprintf("orders/%d=1", q))
	got = jsonLines[messageJSON](t, ok(t, dir, "consume", "orders", "--count", "1", "--output", "json", "--timeout", "20s"))
	if len(got) != 1 || got[0].Body != "a2" {
		t.Fatalf("after reset to orders/%d=1: %+v", q, got)
	}
	fails(t, 2, "outside", dir, "reset-offsets", "equeue-cli", "--offset", fmt.Sprintf("orders/%d=999", q))

	// A filter skips other tags; --timeout ends a consume that gets nothing.
	ok(t, dir, "reset-offsets", "equeue-cli", "--to", "earliest")
	out = ok(t, dir, "consume", "orders", "--filter", "new", "--output", "body", "--timeout", "3s")
	if strings.Fields(out) == nil || !slices.Equal(strings.Fields(out), []string{"a1", "a2", "a3"}) {
		t.Fatalf("filtered consume: %q", out)
	}
	// Messages the filter skipped are committed past too: no lag is left.
	if g := decode[groupJSON](t, ok(t, dir, "groups", "equeue-cli", "--json")); g.Lag != 0 {
		t.Fatalf("lag after a filtered consume: %+v", g)
	}
	fails(t, 1, "printed 0 of 1", dir, "consume", "orders", "--filter", "new", "--count", "1", "--timeout", "500ms")

	st := decode[statsJSON](t, ok(t, dir, "stats", "--json", "--scan"))
	if st.Topics != 1 || st.Queues != 2 || st.Messages != 7 || st.Groups != 1 || st.StoreBytes == nil || st.Scan == nil || st.Scan.Read != 7 || st.Scan.Corrupt != 0 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestDLQ_EmptyGroup(t *testing.T) {
	t.Parallel()
	dir := "--dir=" + t.TempDir()
	ok(t, dir, "topic", "create", "orders")
	// The group exists (it consumed) but never dead-lettered anything.
	ok(t, dir, "consume", "orders", "--group", "billing", "--timeout", "1s")
	if out := ok(t, dir, "dlq", "list", "billing"); !strings.Contains(out, "no dead letters for group billing") {
		t.Fatalf("dlq list: %q", out)
	}
	if out := strings.TrimSpace(ok(t, dir, "dlq", "list", "billing", "--json")); out != "[]" {
		t.Fatalf("dlq list --json: %q", out)
	}
	fails(t, 1, "group billing has no dead letters", dir, "dlq", "redrive", "billing", "--offset", "0")
	fails(t, 2, "--offset N (repeatable) or --all", dir, "dlq", "redrive", "billing")
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	dir := "--dir=" + t.TempDir()
	ok(t, dir, "topic", "create", "orders")
	for _, tc := range []struct {
		want string
		args []string
	}{
		{`unknown command "nope"`, []string{"nope"}},
		{`unknown command "nope" for "equeue topic"`, []string{"topic", "nope"}},
		{"unknown flag: --bogus", []string{dir, "topic", "list", "--bogus"}},
		{"missing argument: equeue topic create takes NAME", []string{dir, "topic", "create"}},
		{"too many arguments", []string{dir, "topic", "describe", "a", "b"}},
		{"no broker: give --dir", []string{"topic", "list"}},
		{"mutually exclusive", []string{dir, "--server=127.0.0.1:1", "topic", "list"}},
		{"invalid name", []string{dir, "topic", "create", "no spaces"}},
		{"--queues 300", []string{dir, "topic", "create", "big", "--queues", "300"}},
		{"N must be a positive number", []string{dir, "topic", "add-queues", "orders", "zero"}},
		{"--property \"novalue\": want KEY=VALUE", []string{dir, "produce", "orders", "x", "--property", "novalue"}},
		{"--from \"yesterday\"", []string{dir, "consume", "orders", "--from", "yesterday"}},
		{"--output", []string{dir, "consume", "orders", "--output", "yaml"}},
		{"--filter", []string{dir, "consume", "orders", "--filter", "a ||"}},
		{"give --to or --offset, not both", []string{dir, "reset-offsets", "g", "--to", "latest", "--offset", "orders/0=1"}},
		{"want TOPIC/QUEUE=OFFSET", []string{dir, "reset-offsets", "g", "--offset", "orders=1"}},
		{"--sync", []string{"serve", dir, "--sync", "sometimes"}},
		{"unknown right", []string{"serve", dir, "--token", "t=everything"}},
		{"--log-level", []string{dir, "--log-level", "loud", "topic", "list"}},
		{"give --count or --duration, not both", []string{"bench", "--count", "10", "--duration", "1s"}},
	} {
		r := cli(t, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("equeue %s: want exit 2 and %q, got %v", strings.Join(tc.args, " "), tc.want, r)
		}
	}
	// Runtime failures exit 1.
	fails(t, 1, "does not exist", "--dir="+t.TempDir()+"/missing", "topic", "list")
	fails(t, 1, "topic not found", dir, "produce", "nope", "x")
	fails(t, 1, "group not found", dir, "groups", "nope")

	// Every command explains itself with an example (the README says so):
	// each one of the tree, so a new command cannot go without.
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c.HasParent() && c.Example == "" {
			t.Errorf("%q has no example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newApp(nil, io.Discard, io.Discard).rootCommand())
	out := ok(t, "cluster", "status", "--help")
	if !strings.Contains(out, "Examples:") {
		t.Errorf("equeue cluster status --help has no example:\n%s", out)
	}
}

func TestBench_JSON(t *testing.T) {
	t.Parallel()
	r := cli(t, "bench", "--json", "--count", "2000")
	if r.code != 0 {
		t.Fatal(r)
	}
	if strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
		t.Fatalf("bench --json printed more than one line:\n%s", r.stdout)
	}
	b := decode[benchJSON](t, r.stdout)
	if b.Messages != 2000 || b.MsgsPerSec <= 0 || b.MBPerSec <= 0 || b.SendLatency.Max <= 0 || b.SendLatency.P50 > b.SendLatency.P99 {
		t.Fatalf("bench: %+v", b)
	}
	if b.Baseline == nil || b.Baseline.Values != 2000 || b.Baseline.MsgsPerSec <= 0 || b.Ratio <= 0 {
		t.Fatalf("bench baseline: %+v %+v", b.Baseline, b.Ratio)
	}
	if strings.Contains(r.stderr, "produce") {
		t.Fatalf("bench --json drew a progress bar:\n%s", r.stderr)
	}

	// With consumers and batches, on a directory the test keeps.
	dir := t.TempDir()
	r = cli(t, "--dir", dir, "bench", "--json", "--count", "500", "--consumers", "2", "--batch", "10", "--sync", "never", "--baseline=false")
	if r.code != 0 {
		t.Fatal(r)
	}
	b = decode[benchJSON](t, r.stdout)
	if b.Consume == nil || b.Consume.Messages != 500 || b.Consume.MsgsPerSec <= 0 || b.Consume.Latency.Max <= 0 || b.Baseline != nil {
		t.Fatalf("bench with consumers: %+v %+v", b, b.Consume)
	}
	// The benchmark topic is gone afterwards.
	if topics := decode[[]topicJSON](t, ok(t, "--dir", dir, "topic", "list", "--json")); len(topics) != 0 {
		t.Fatalf("bench left topics: %+v", topics)
	}
}

// deadLetters makes n dead letters of group in dir with an in-process
// engine whose handler gives up on every message.
func deadLetters(t *testing.T, dir, group string, n int) {
	t.Helper()
	deadLettersOf(t, dir, group, equeue.Clustering, n)
}

// deadLettersOf is deadLetters for a group of the given model.
func deadLettersOf(t *testing.T, dir, group string, model equeue.MessageModel, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := equeue.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}()
	if err := e.CreateTopic(ctx, "payments", 1); err != nil {
		t.Fatal(err)
	}
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group: group, Model: model, Subscriptions: []equeue.Subscription{{Topic: "payments"}}, From: equeue.ConsumeFromEarliest,
		PullWait: 50 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error {
			return equeue.DeadLetter(errors.New("card declined"))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := equeue.NewProducer(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < n; i++ {
		if _, err := p.Send(ctx, &equeue.Message{Topic: "payments", Body: []byte(fmt.Sprintf("payment %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 20*time.Second, "dead letters", func() bool {
		dls, err := e.ListDeadLetters(ctx, group, equeue.ListDeadLettersRequest{})
		return err == nil && len(dls) == n
	})
}

func TestDLQ_ListAndRedrive(t *testing.T) {
	t.Parallel()
	d := t.TempDir()
	deadLetters(t, d, "billing", 3)
	dir := "--dir=" + d

	out := ok(t, dir, "dlq", "list", "billing")
	if !strings.Contains(out, "payments/0:1") || !strings.Contains(out, "card declined") || !strings.Contains(out, "payment 2") {
		t.Fatalf("dlq list:\n%s", out)
	}
	if out := ok(t, dir, "dlq", "list", "billing", "--max", "2"); !strings.Contains(out, "more follow: dlq list billing --from 2") {
		t.Fatalf("dlq list --max 2:\n%s", out)
	}
	// A page that ends with the last dead letter says nothing more follows.
	if out := ok(t, dir, "dlq", "list", "billing", "--max", "3"); strings.Contains(out, "follow") {
		t.Fatalf("dlq list --max 3 of 3:\n%s", out)
	}
	if out := ok(t, dir, "dlq", "redrive", "billing", "--offset", "1"); !strings.Contains(out, "redrove 1 dead letters") {
		t.Fatalf("redrive: %q", out)
	}
	dls := decode[[]deadLetterJSON](t, ok(t, dir, "dlq", "list", "billing", "--json"))
	// Handlers run concurrently, so dead letters are in no particular order.
	if len(dls) != 3 || dls[0].Redriven || !dls[1].Redriven || dls[2].Redriven || dls[1].Offset != 1 ||
		dls[1].LastError != "dead letter: card declined" || dls[1].Message.Topic != "payments" || !strings.HasPrefix(dls[1].Message.Body, "payment ") {
		t.Fatalf("dlq list --json after redrive: %+v", dls)
	}
	// The redriven one went to the group's retry topic, not to payments,
	// which other groups may consume.
	if ti := decode[topicJSON](t, ok(t, dir, "topic", "describe", equeue.RetryTopic("billing"), "--json")); ti.Messages != 1 {
		t.Fatalf("retry topic after redrive: %+v", ti)
	}
	// --all --to-topic sends the other two back to payments; the redriven
	// one is not sent twice.
	if out := ok(t, dir, "dlq", "redrive", "billing", "--all", "--to-topic"); !strings.Contains(out, "redrove 2 dead letters") {
		t.Fatalf("redrive --all --to-topic: %q", out)
	}
	ti := decode[topicJSON](t, ok(t, dir, "topic", "describe", "payments", "--json"))
	if ti.Messages != 5 {
		t.Fatalf("payments after redrive: %+v", ti)
	}
}

// A broadcasting group has no retry topic: its dead letters are redriven
// only with --to-topic, and the refusal says so.
func TestDLQ_RedriveOfABroadcastingGroupNeedsToTopic(t *testing.T) {
	t.Parallel()
	d := t.TempDir()
	deadLettersOf(t, d, "audit", equeue.Broadcasting, 1)
	dir := "--dir=" + d

	fails(t, 2, "--to-topic", dir, "dlq", "redrive", "audit", "--all")
	if dls := decode[[]deadLetterJSON](t, ok(t, dir, "dlq", "list", "audit", "--json")); len(dls) != 1 || dls[0].Redriven {
		t.Fatalf("dlq list after a refused redrive: %+v", dls)
	}
	if out := ok(t, dir, "dlq", "redrive", "audit", "--all", "--to-topic"); !strings.Contains(out, "redrove 1 dead letters") {
		t.Fatalf("redrive --all --to-topic: %q", out)
	}
	if ti := decode[topicJSON](t, ok(t, dir, "topic", "describe", "payments", "--json")); ti.Messages != 2 {
		t.Fatalf("payments after redrive: %+v", ti)
	}
}
