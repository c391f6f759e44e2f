package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// TestAuth_BearerSchemeIsCaseInsensitive sends the authorization metadata
// with the scheme spelled as RFC 7235 allows ("bearer", "BEARER"): each is
// the token's, for unary calls, the append stream, and a namespace-scoped
// token, which still sees only its namespace.
func TestAuth_BearerSchemeIsCaseInsensitive(t *testing.T) {
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	ns, err := e.Namespace("tenant-a")
	require.NoError(t, err)
	require.NoError(t, ns.CreateTopic(ctxT(t), "own", 1))
	_, conn := rightsServer(t, e)
	api := pb.NewBrokerClient(conn)

	topics := func(authorization string) ([]string, error) {
		ctx, cancel := context.WithTimeout(ctxT(t), 5*time.Second)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", authorization)
		res, err := api.ListTopics(ctx, &pb.ListTopicsRequest{})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, ti := range res.GetTopics() {
			names = append(names, ti.GetName())
		}
		return names, nil
	}
	for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
		names, err := topics(scheme + " tok-" + remote.RightAll.String())
		require.NoError(t, err, scheme)
		assert.Contains(t, names, "t", scheme)

		names, err = topics(scheme + " tok-ns-admin")
		require.NoError(t, err, scheme)
		assert.Equal(t, []string{"own"}, names, "%s: a scoped token sees its namespace alone", scheme)

		errs, err := streamCall(t, conn, scheme+" tok-produce", &pb.AppendStreamRequest{Appends: []*pb.StreamAppend{
			{Seq: 1, Append: &pb.AppendRequest{Topic: "t", Messages: []*pb.Message{{Body: []byte("x")}}}}}})
		require.NoError(t, err, scheme)
		assert.NoError(t, errs[0], scheme)
	}
}
