package remote_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// A call whose metadata is larger than ServerOptions.MaxMetadataBytes
// (default DefaultMaxMetadataBytes) is refused with an error that says so,
// rather than held in memory for as long as the call lasts (16 MiB a call
// by gRPC's default, for every long-poll a connection holds); calls within
// the bound on the same connection are served as before.
func TestServer_OversizedMetadataIsRefused(t *testing.T) {
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	api := pb.NewBrokerClient(rawConn(t, s.addr))
	_, err := api.ListTopics(ctxT(t), &pb.ListTopicsRequest{})
	require.NoError(t, err, "a call without extra metadata")
	within := metadata.AppendToOutgoingContext(ctxT(t), "x-pad", strings.Repeat("p", remote.DefaultMaxMetadataBytes/2))
	_, err = api.ListTopics(within, &pb.ListTopicsRequest{})
	require.NoError(t, err, "a call with metadata within the bound")
	huge := metadata.AppendToOutgoingContext(ctxT(t), "x-pad", strings.Repeat("p", 1<<20))
	_, err = api.ListTopics(huge, &pb.ListTopicsRequest{})
	require.Error(t, err, "a call with 1 MiB of metadata")
	assert.Contains(t, err.Error(), "header list size")
	_, err = api.ListTopics(ctxT(t), &pb.ListTopicsRequest{})
	require.NoError(t, err, "the connection serves on")

	// A client whose token alone is over the bound gets the same clear
	// error, not a hang or a panic.
	c := dial(t, s.addr, &remote.ClientOptions{Token: strings.Repeat("t", 1<<20)})
	_, err = c.Topics(ctxT(t))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "header list size")
}

// A bound set in ServerOptions.MaxMetadataBytes holds, and a negative one
// is refused.
func TestServer_MaxMetadataBytesOption(t *testing.T) {
	e := openEngine(t, nil)
	_, err := remote.NewServer(e, &remote.ServerOptions{MaxMetadataBytes: -1})
	require.Error(t, err)
	s := startServer(t, e, "", &remote.ServerOptions{MaxMetadataBytes: 4 << 10})
	api := pb.NewBrokerClient(rawConn(t, s.addr))
	_, err = api.ListTopics(ctxT(t), &pb.ListTopicsRequest{})
	require.NoError(t, err)
	_, err = api.ListTopics(metadata.AppendToOutgoingContext(ctxT(t), "x-pad", strings.Repeat("p", 8<<10)), &pb.ListTopicsRequest{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "header list size")
}
