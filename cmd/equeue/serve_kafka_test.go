package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

func saslClient(t *testing.T, addr, token string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "u", Pass: token}.AsMechanism()),
		kgo.RequestRetries(0), kgo.RetryTimeout(5 * time.Second)}, opts...)
	c, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestServe_Kafka: `serve --kafka` serves Kafka clients beside gRPC, with
// serve's tokens as SASL/PLAIN passwords and their rights.
func TestServe_Kafka(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "orders", "--queues", "2")
	addr, kaddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--kafka", kaddr,
		"--token", "writer=produce", "--token", "reader=consume")
	eventually(t, 20*time.Second, "the Kafka listener", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		c, err := net.Dial("tcp", kaddr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	w := saslClient(t, kaddr, "writer", kgo.DefaultProduceTopic("orders"))
	if err := w.ProduceSync(ctx, &kgo.Record{Value: []byte("via kafka")}).FirstErr(); err != nil {
		t.Fatalf("produce with the writer token: %v", err)
	}
	// The reader token may not produce; an unknown token is refused.
	r := saslClient(t, kaddr, "reader", kgo.DefaultProduceTopic("orders"), kgo.DisableIdempotentWrite())
	if err := r.ProduceSync(ctx, &kgo.Record{Value: []byte("no")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce with the reader token: %v", err)
	}
	bad := saslClient(t, kaddr, "wrong")
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bad); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("produce with a wrong token: %v", err)
	}
	c := saslClient(t, kaddr, "reader", kgo.ConsumeTopics("orders"))
	fs := c.PollFetches(ctx)
	if errs := fs.Errors(); len(errs) > 0 || len(fs.Records()) != 1 || string(fs.Records()[0].Value) != "via kafka" {
		t.Fatalf("consume with the reader token: %v %v", errs, fs.Records())
	}
	c.Close()
	w.Close()
	r.Close()
	bad.Close()
	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM; its log:\n%s", code, srv.stderr)
	}
	if log := srv.stderr.String(); !strings.Contains(log, "serving Kafka protocol") {
		t.Errorf("serve's log lacks the Kafka listener:\n%s", log)
	}
	// Only the one message the writer token produced was stored.
	ti := decode[topicJSON](t, ok(t, "--dir", dir, "topic", "describe", "orders", "--json"))
	if ti.Messages != 1 {
		t.Fatalf("after serve: %+v", ti)
	}
}

// `serve --kafka-namespace NS` serves one namespace over Kafka, by plain
// names, to the whole engine's tokens and to the tokens scoped to NS.
func TestServe_KafkaNamespace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, kaddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--kafka", kaddr, "--kafka-namespace", "a",
		"--token", "ops=all", "--token", "ta=all@a", "--token", "tb=all@b")
	eventually(t, 20*time.Second, "the Kafka listener", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		c, err := net.Dial("tcp", kaddr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	ok(t, "--server", addr, "--token", "ta", "topic", "create", "orders", "--queues", "1")
	ok(t, "--server", addr, "--token", "tb", "topic", "create", "orders", "--queues", "1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := saslClient(t, kaddr, "ta", kgo.DefaultProduceTopic("orders"))
	if err := w.ProduceSync(ctx, &kgo.Record{Value: []byte("for a")}).FirstErr(); err != nil {
		t.Fatalf("produce with namespace a's token: %v", err)
	}
	if out := ok(t, "--server", addr, "--token", "ta", "consume", "orders", "--from", "earliest", "--count", "1"); !strings.Contains(out, "for a") {
		t.Fatalf("namespace a's orders: %q", out)
	}
	if out := ok(t, "--server", addr, "--token", "ops", "peek", "a:orders"); !strings.Contains(out, "for a") {
		t.Fatalf("the engine's a:orders: %q", out)
	}
	if out := ok(t, "--server", addr, "--token", "ops", "peek", "b:orders"); strings.Contains(out, "for a") {
		t.Fatalf("namespace b got a's message: %q", out)
	}
	bad := saslClient(t, kaddr, "tb")
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bad); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("namespace b's token on namespace a's listener: %v", err)
	}
	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, srv.stderr)
	}
}

// `serve --kafka-namespace NS` admits the tokens scoped to NS, so a server
// whose tokens are all scoped (one tenant per token) can still serve NS
// over Kafka: only add-ons that serve the whole engine need an unscoped one.
func TestServe_KafkaNamespaceWithScopedTokensOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, kaddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--kafka", kaddr, "--kafka-namespace", "a",
		"--token", "ta=all@a", "--token", "tb=all@b")
	eventually(t, 20*time.Second, "the Kafka listener", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		c, err := net.Dial("tcp", kaddr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	ok(t, "--server", addr, "--token", "ta", "topic", "create", "orders", "--queues", "1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := saslClient(t, kaddr, "ta", kgo.DefaultProduceTopic("orders"))
	if err := w.ProduceSync(ctx, &kgo.Record{Value: []byte("for a")}).FirstErr(); err != nil {
		t.Fatalf("produce with namespace a's token: %v", err)
	}
	w.Close()
	bad := saslClient(t, kaddr, "tb")
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bad); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("namespace b's token on namespace a's listener: %v", err)
	}
	bad.Close()
	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, srv.stderr)
	}
}

// A --kafka-* flag given without --kafka, which switches the listener on,
// is refused as a usage error naming both flags before serve takes a port
// or creates anything, rather than ignored.
func TestServe_KafkaFlagsWithoutKafka(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--kafka-advertise", "kafka.example.com:9092"},
		{"--kafka-namespace", "a"},
		{"--kafka-max-inflating", "1"},
		{"--kafka-max-inflated-bytes", "0"},
		{"--kafka-max-queued-request-bytes", "0"},
		{"--kafka-max-connections", "0"},
		{"--kafka-request-read-timeout", "0s"},
		{"--kafka-connections-max-idle", "10m"},
	} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			assertServeRefuses(t, args[0]+" needs --kafka ADDR", args...)
		})
	}
}

// `serve --kafka-max-inflating N --kafka-max-inflated-bytes BYTES` bound
// the listener's decompression (kafka.Options.MaxInflating and
// MaxInflatedBytes): a value that is not a count, or a negative one, is
// refused as a usage error naming its flag before serve creates anything;
// good ones are taken, and compressed batches are stored under them (one
// larger than the byte bound waits for the whole of it, then is stored).
func TestServe_KafkaInflateBounds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--kafka-max-inflating", "-1"}, "--kafka-max-inflating -1: must not be negative"},
		{[]string{"--kafka-max-inflated-bytes", "-1"}, "--kafka-max-inflated-bytes -1: must not be negative"},
		{[]string{"--kafka-max-inflating", "two"}, `invalid argument "two" for "--kafka-max-inflating"`},
		{[]string{"--kafka-max-inflated-bytes", "1MiB"}, `invalid argument "1MiB" for "--kafka-max-inflated-bytes"`},
	} {
		assertServeRefuses(t, c.want, append([]string{"--kafka", freePort(t)}, c.args...)...)
	}

	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "orders", "--queues", "1")
	addr, kaddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--kafka", kaddr,
		"--kafka-max-inflating", "1", "--kafka-max-inflated-bytes", "16")
	eventually(t, 20*time.Second, "the Kafka listener", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		c, err := net.Dial("tcp", kaddr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kaddr), kgo.DefaultProduceTopic("orders"),
		kgo.ProducerBatchCompression(kgo.GzipCompression()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	body := strings.Repeat("inflated ", 100) // more than the 16 bytes bound
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(body)}).FirstErr(), "a gzip batch under the bounds")
	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM; its log:\n%s", code, srv.stderr)
	}
	ti := decode[topicJSON](t, ok(t, "--dir", dir, "topic", "describe", "orders", "--json"))
	assert.EqualValues(t, 1, ti.Messages, "the compressed batch was stored")
}
