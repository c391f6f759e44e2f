package main

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// kafkaVersions sends an ApiVersions v0 request on nc and reads its
// answer's correlation ID.
func kafkaVersions(nc net.Conn, correlation int32) (int32, error) {
	b := binary.BigEndian.AppendUint32(nil, 10)
	b = binary.BigEndian.AppendUint16(b, 18) // ApiVersions
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(correlation))
	b = binary.BigEndian.AppendUint16(b, 0xffff) // no client ID
	if _, err := nc.Write(b); err != nil {
		return 0, err
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return 0, err
	}
	resp := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, resp); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(resp)), nil
}

// dialKafka connects to addr, closed when the test ends; its reads give
// up after a minute rather than hang the test.
func dialKafka(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(time.Minute)))
	return nc
}

// `serve --kafka-max-queued-request-bytes BYTES --kafka-max-connections N
// --kafka-request-read-timeout D` set the listener's
// kafka.Options.MaxQueuedRequestBytes, MaxConnections and
// RequestReadTimeout: a value that does not parse, or a negative one, is
// refused as a usage error naming its flag before serve creates anything;
// good ones are taken: a connection past the bound is closed, and one
// that sends a frame's size but not its body is closed once the timeout
// passed, which lets a new connection be served.
func TestServe_KafkaRequestBounds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--kafka-max-queued-request-bytes", "-1"}, "--kafka-max-queued-request-bytes -1: must not be negative"},
		{[]string{"--kafka-max-connections", "-1"}, "--kafka-max-connections -1: must not be negative"},
		{[]string{"--kafka-request-read-timeout", "-1s"}, "--kafka-request-read-timeout -1s: must not be negative"},
		{[]string{"--kafka-max-queued-request-bytes", "1MiB"}, `invalid argument "1MiB" for "--kafka-max-queued-request-bytes"`},
		{[]string{"--kafka-max-connections", "many"}, `invalid argument "many" for "--kafka-max-connections"`},
		{[]string{"--kafka-request-read-timeout", "30"}, `invalid argument "30" for "--kafka-request-read-timeout"`},
	} {
		assertServeRefuses(t, c.want, append([]string{"--kafka", freePort(t)}, c.args...)...)
	}

	dir := t.TempDir()
	addr, kaddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--kafka", kaddr,
		"--kafka-max-queued-request-bytes", "65536", "--kafka-max-connections", "1",
		"--kafka-request-read-timeout", "200ms")
	served := firstServedKafkaConn(t, srv, kaddr)

	_, err := kafkaVersions(dialKafka(t, kaddr), 2)
	require.Error(t, err, "a second connection is past --kafka-max-connections 1")

	_, err = served.Write(binary.BigEndian.AppendUint32(nil, 1000)) // a size, no body
	require.NoError(t, err)
	var size [4]byte
	_, err = io.ReadFull(served, size[:])
	require.Error(t, err, "the connection that sent no body is closed")
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "closed by serve, not by the test's minute")

	eventually(t, 20*time.Second, "a new Kafka connection served", func() bool {
		nc, err := net.Dial("tcp", kaddr)
		if err != nil {
			return false
		}
		defer func() { _ = nc.Close() }()
		_ = nc.SetReadDeadline(time.Now().Add(time.Minute))
		got, err := kafkaVersions(nc, 3)
		return err == nil && got == 3
	})
	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM; its log:\n%s", code, srv.stderr)
	}
}

// `serve --kafka-connections-max-idle D` sets the listener's
// kafka.Options.ConnectionsMaxIdle: a value that does not parse, zero
// or a negative one is refused as a usage error naming the flag before
// serve creates anything; a good one is taken: a connection that sends
// nothing for that long is closed by serve.
func TestServe_KafkaConnectionsMaxIdle(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--kafka-connections-max-idle", "0s"}, "--kafka-connections-max-idle 0s: must be positive"},
		{[]string{"--kafka-connections-max-idle", "-1s"}, "--kafka-connections-max-idle -1s: must be positive"},
		{[]string{"--kafka-connections-max-idle", "600"}, `invalid argument "600" for "--kafka-connections-max-idle"`},
	} {
		assertServeRefuses(t, c.want, append([]string{"--kafka", freePort(t)}, c.args...)...)
	}

	dir := t.TempDir()
	addr, kaddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--kafka", kaddr,
		"--kafka-connections-max-idle", "200ms")
	served := firstServedKafkaConn(t, srv, kaddr)

	var size [4]byte
	_, err := io.ReadFull(served, size[:])
	require.Error(t, err, "the idle connection is closed")
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "closed by serve, not by the test's minute")
	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM; its log:\n%s", code, srv.stderr)
	}
}

// firstServedKafkaConn waits for srv's Kafka listener at kaddr to answer an
// ApiVersions request and returns that connection (closed at the test's
// end), with a read deadline a minute away.
func firstServedKafkaConn(t *testing.T, srv *server, kaddr string) net.Conn {
	t.Helper()
	var conn net.Conn
	eventually(t, 20*time.Second, "a served Kafka connection", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		nc, err := net.Dial("tcp", kaddr)
		if err != nil {
			return false
		}
		_ = nc.SetReadDeadline(time.Now().Add(time.Minute))
		if _, err := kafkaVersions(nc, 1); err != nil {
			_ = nc.Close()
			return false
		}
		conn = nc
		return true
	})
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
