package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// The flags of the gRPC server's limits (remote.ServerOptions) are in
// serve's --help; a value that does not parse, or a negative one, is
// refused as a usage error naming its flag before serve creates anything.
func TestServe_ServerLimitFlagsAreChecked(t *testing.T) {
	t.Parallel()
	help := ok(t, "serve", "--help")
	for _, name := range []string{"max-message-bytes", "max-metadata-bytes", "max-in-flight", "max-in-flight-per-conn",
		"max-long-polls", "max-long-polls-per-conn", "max-long-poll-bytes", "max-append-streams",
		"max-append-streams-per-conn", "max-stream-appends-per-conn"} {
		assert.Contains(t, help, "--"+name+" ")
		assertServeRefuses(t, "--"+name+" -1: must not be negative", "--"+name, "-1")
		assertServeRefuses(t, `invalid argument "1MiB" for "--`+name+`"`, "--"+name, "1MiB")
	}
}

// `serve --max-message-bytes BYTES --max-long-poll-bytes BYTES` reach the
// gRPC server (remote.ServerOptions.MaxMessageBytes, MaxLongPollBytes): a
// message larger than the first is refused as too large, and a long-poll
// whose request, with those already held (a consumer's), passes the
// second is refused as busy, naming MaxLongPollBytes, before the server
// looks at what it asks.
func TestServe_LongPollBytesFlagReachesTheServer(t *testing.T) {
	t.Parallel()
	// The least --max-message-bytes serve takes
	// (TestServe_MaxMessageBytesBelowAFullSizeMessageIsRefused).
	const limit = equeue.DefaultMaxMessageSize + 64<<10
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "t", "--queues", "1")
	addr := freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--max-message-bytes", strconv.Itoa(limit), "--max-long-poll-bytes", strconv.Itoa(limit))
	eventually(t, 20*time.Second, "serve answers", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		return cli(t, "--server", addr, "produce", "t", "small").code == 0
	})
	big := filepath.Join(t.TempDir(), "big")
	require.NoError(t, os.WriteFile(big, make([]byte, limit+1), 0o600))
	r := cli(t, "--server", addr, "produce", "t", "--body-file", big)
	assert.Equal(t, 1, r.code, r.String())
	assert.Contains(t, r.stderr, "too large")

	// A consumer holds its long-polls (a pull and a heartbeat).
	cons := startProduce(t, "--server", addr, "consume", "t", "--group", "g", "--from", "earliest", "--output", "body")
	eventually(t, 20*time.Second, "the consumer's first message", func() bool { return cons.stdout.String() == "small\n" })

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	// A long-poll request of just under the bound: alone it fits, so it
	// is refused as busy only with the consumer's long-polls counted.
	req := &pb.PullRequest{Topic: "t", Group: "g", Member: "m", Wait: durationpb.New(time.Second)}
	req.Filter = strings.Repeat("a", limit-16-proto.Size(req))
	for proto.Size(req) > limit-16 {
		req.Filter = req.Filter[1:]
	}
	var last error
	eventually(t, 20*time.Second, "a long-poll refused as past --max-long-poll-bytes", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, last = pb.NewBrokerClient(conn).Pull(ctx, req)
		return status.Code(last) == codes.ResourceExhausted && strings.Contains(last.Error(), "MaxLongPollBytes")
	})
	require.NoError(t, cons.cmd.Process.Signal(os.Interrupt))
	assert.Equal(t, 0, cons.exitCode(t), cons.stderr.String())
	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM; its log:\n%s", code, srv.stderr)
	}
}

// `serve --max-message-bytes` smaller than one message of the engine's
// largest (serve keeps equeue.DefaultMaxMessageSize) and its request's
// framing would refuse, over gRPC, messages the engine takes (and takes
// from a Kafka client of the same serve): it is refused as a usage error,
// naming the least it takes and why, before serve takes a port or creates
// anything. That least is taken (TestServe_LongPollBytesFlagReachesTheServer
// serves with it), and so is more: a request carries a batch of messages.
func TestServe_MaxMessageBytesBelowAFullSizeMessageIsRefused(t *testing.T) {
	t.Parallel()
	least := equeue.DefaultMaxMessageSize + 64<<10
	for _, v := range []int{1, 65536, least - 1} {
		assertServeRefuses(t, fmt.Sprintf("--max-message-bytes %d: below %d, the engine's largest message (%d) and its request's framing",
			v, least, equeue.DefaultMaxMessageSize), "--max-message-bytes", strconv.Itoa(v))
	}
}
