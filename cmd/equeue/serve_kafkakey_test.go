package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// kafkaBatch is a raw record batch of an idempotent producer pid, epoch,
// from sequence number seq, with one record per value.
func kafkaBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // Length written as given: measured with 0, one byte
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		Magic: 2, LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_000_000,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(len(values)), Records: recs,
	}
	b.Length = int32(49 + len(recs))
	raw := b.AppendTo(nil)
	crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	raw[17], raw[18], raw[19], raw[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	return raw
}

// produceKafkaBatch sends batch to partition 0 of topic and returns the
// partition's answer.
func produceKafkaBatch(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// startKafkaServe starts serve on dir with the Kafka listener and args,
// and waits until the listener serves (serve takes its port before it
// opens the directory: a connection there says nothing of the listener);
// it returns serve and the listener's address.
func startKafkaServe(t *testing.T, dir string, args ...string) (*server, string) {
	t.Helper()
	kaddr := freePort(t)
	srv := startServe(t, append([]string{"--dir", dir, "--listen", freePort(t), "--kafka", kaddr}, args...)...)
	eventually(t, 20*time.Second, "the Kafka listener", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		return strings.Contains(srv.stderr.String(), "serving Kafka protocol")
	})
	return srv, kaddr
}

// storedIDs returns the message IDs of partition 0 of topic in dir, which
// no serve holds.
func storedIDs(t *testing.T, dir, topic string) []string {
	t.Helper()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	res, err := e.Pull(context.Background(), &equeue.PullRequest{Topic: topic, Offset: 0, Max: 100})
	require.NoError(t, err)
	var ids []string
	for _, m := range res.Messages {
		ids = append(ids, m.ID)
	}
	return ids
}

// markedWith reports whether id, a record's of topic that the listener
// stored for an idempotent producer, ends with the mark key gives it.
func markedWith(key []byte, topic, id string) bool {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return false
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte(strconv.Itoa(len(topic)) + ":" + topic + id[:i]))
	return id[i+1:] == hex.EncodeToString(h.Sum(nil)[:8])
}

// TestServe_KafkaRecordKeyKeptAcrossRestarts: serve with the Kafka
// listener makes a random key in the directory on its first start, marks
// the idempotent producers' records with it, and reads it again on the
// next: the file is unchanged, and a producer's retry across the restart
// is acknowledged where its batch was stored, not stored twice.
func TestServe_KafkaRecordKeyKeptAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "t", "--queues", "1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	srv, kaddr := startKafkaServe(t, dir)
	key, err := os.ReadFile(filepath.Join(dir, kafkaRecordKeyFile))
	require.NoError(t, err, "the key is kept before the listener serves")
	require.Len(t, key, kafkaRecordKeyLen)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kaddr))
	require.NoError(t, err)
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, int16(0), init.ErrorCode)
	pid, epoch := init.ProducerID, init.ProducerEpoch
	require.Equal(t, int16(0), produceKafkaBatch(ctx, t, cl, "t", kafkaBatch(pid, epoch, 0, "a", "b")).ErrorCode)
	cl.Close()
	require.Equal(t, 0, srv.stop(t), "serve's log:\n%s", srv.stderr)
	ids := storedIDs(t, dir, "t")
	require.Len(t, ids, 2)
	for _, id := range ids {
		assert.True(t, markedWith(key, "t", id), "%s is marked with the key kept", id)
	}

	srv, kaddr = startKafkaServe(t, dir)
	again, err := os.ReadFile(filepath.Join(dir, kafkaRecordKeyFile))
	require.NoError(t, err)
	assert.Equal(t, key, again, "the key is kept, not made again")
	cl, err = kgo.NewClient(kgo.SeedBrokers(kaddr))
	require.NoError(t, err)
	defer cl.Close()
	retry := produceKafkaBatch(ctx, t, cl, "t", kafkaBatch(pid, epoch, 0, "a", "b"))
	require.Equal(t, int16(0), retry.ErrorCode)
	assert.Equal(t, int64(0), retry.BaseOffset, "the retry is acknowledged where it was stored")
	next := produceKafkaBatch(ctx, t, cl, "t", kafkaBatch(pid, epoch, 2, "c"))
	require.Equal(t, int16(0), next.ErrorCode)
	assert.Equal(t, int64(2), next.BaseOffset)
	cl.Close()
	require.Equal(t, 0, srv.stop(t), "serve's log:\n%s", srv.stderr)
	assert.Len(t, storedIDs(t, dir, "t"), 3, "nothing stored twice")
}

// TestServe_KafkaRecordKeyMalformedRefusesTheStart: a key file of the
// wrong length, or one that cannot be read, refuses the start, naming the
// file, and is left as it was: a new key would leave the records marked
// with the old one unread.
func TestServe_KafkaRecordKeyMalformedRefusesTheStart(t *testing.T) {
	t.Parallel()
	t.Run("wrong length", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ok(t, "--dir", dir, "topic", "create", "t")
		path := filepath.Join(dir, kafkaRecordKeyFile)
		require.NoError(t, os.WriteFile(path, []byte("short"), 0o600))
		r := cli(t, "--dir", dir, "serve", "--listen", freePort(t), "--kafka", freePort(t))
		assert.NotEqual(t, 0, r.code, "%v", r)
		assert.Contains(t, r.stderr, path)
		assert.Contains(t, r.stderr, "5 bytes")
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "short", string(got), "the file is not replaced")
	})
	t.Run("unreadable", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ok(t, "--dir", dir, "topic", "create", "t")
		path := filepath.Join(dir, kafkaRecordKeyFile)
		require.NoError(t, os.Mkdir(path, 0o700)) // no file to read
		r := cli(t, "--dir", dir, "serve", "--listen", freePort(t), "--kafka", freePort(t))
		assert.NotEqual(t, 0, r.code, "%v", r)
		assert.Contains(t, r.stderr, path)
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.True(t, st.IsDir(), "left as it was")
	})
}

// TestServe_KafkaRecordKeyFileFlag: --kafka-record-key-file gives the
// key (one trailing newline dropped), and the directory keeps none; a key
// file too short is refused.
func TestServe_KafkaRecordKeyFileFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "t", "--queues", "1")
	keyPath := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyPath, []byte("an operator's own key, managed\n"), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	srv, kaddr := startKafkaServe(t, dir, "--kafka-record-key-file", keyPath)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kaddr))
	require.NoError(t, err)
	defer cl.Close()
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, int16(0), produceKafkaBatch(ctx, t, cl, "t", kafkaBatch(init.ProducerID, init.ProducerEpoch, 0, "a")).ErrorCode)
	cl.Close()
	require.Equal(t, 0, srv.stop(t), "serve's log:\n%s", srv.stderr)
	ids := storedIDs(t, dir, "t")
	require.Len(t, ids, 1)
	assert.True(t, markedWith([]byte("an operator's own key, managed"), "t", ids[0]), "%s is marked with the flag's key", ids[0])
	assert.NoFileExists(t, filepath.Join(dir, kafkaRecordKeyFile))

	short := filepath.Join(t.TempDir(), "short")
	require.NoError(t, os.WriteFile(short, []byte("too short\n"), 0o600))
	fails(t, 2, "--kafka-record-key-file "+short, "--dir", dir, "serve", "--listen", freePort(t), "--kafka", freePort(t), "--kafka-record-key-file", short)
}

// TestClusterRecordKey: the nodes of a cluster derive the same key from
// the secret they share, another secret gives another key, and the key is
// neither the secret nor the built-in one (no key).
func TestClusterRecordKey(t *testing.T) {
	secret := []byte("the secret every node of the cluster shares")
	var keys [][]byte
	for range 2 { // two nodes
		k := &kafkaAddon{}
		key, err := k.recordKey(serveEnv{clusterSecret: append([]byte(nil), secret...), log: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		keys = append(keys, key)
	}
	require.Len(t, keys[0], sha256.Size)
	assert.Equal(t, keys[0], keys[1], "every node computes the same key")
	assert.NotEqual(t, secret, keys[0])
	other, err := (&kafkaAddon{}).recordKey(serveEnv{clusterSecret: []byte("the secret of another cluster, not this one"), log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	assert.NotEqual(t, keys[0], other, "another secret gives another key")

	none, err := (&kafkaAddon{}).recordKey(serveEnv{log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	assert.Nil(t, none, "without a secret, the built-in key")

	keyPath := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyPath, []byte("an operator's own key, managed"), 0o600))
	flagged, err := (&kafkaAddon{keyFile: keyPath}).recordKey(serveEnv{clusterSecret: secret, log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	assert.Equal(t, []byte("an operator's own key, managed"), flagged, "the flag overrides the secret")
}

// TestServe_KafkaRecordKeyDanglingLinkRefusesTheStart: a kafka-record-key
// that is a link to a file not there (a volume not mounted yet) is a key
// the directory keeps that cannot be read: the start is refused, naming
// the file, and the link is left as it was, not replaced by a new key.
func TestServe_KafkaRecordKeyDanglingLinkRefusesTheStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "t")
	path := filepath.Join(dir, kafkaRecordKeyFile)
	target := filepath.Join(t.TempDir(), "not-mounted", "key")
	require.NoError(t, os.Symlink(target, path))
	r := cli(t, "--dir", dir, "serve", "--listen", freePort(t), "--kafka", freePort(t))
	assert.NotEqual(t, 0, r.code, "%v", r)
	assert.Contains(t, r.stderr, path)
	got, err := os.Readlink(path)
	require.NoError(t, err, "the link is left as it was")
	assert.Equal(t, target, got)
}
