package remote_test

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// TestNamespace_TokenCannotTellWhetherAnotherNamespacesNameExists calls
// every RPC of the Broker service with a token of tenant-a, once naming
// something tenant-b has (its topic, group, retry, dead-letter and reply
// topics, by tenant-b's own names and by the engine's) and once naming
// the same kind of thing that exists nowhere, and checks that the two
// answers are alike: both succeed, or both fail with the same code and
// the same text but for the name. So no answer, error texts included,
// tells tenant-a what tenant-b has.
func TestNamespace_TokenCannotTellWhetherAnotherNamespacesNameExists(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := namespaceServer(t, e)
	b := dial(t, s.addr, &remote.ClientOptions{Token: "tok-b"})
	populate(t, b, "secret-b")
	reply := b.NewReplyTopicName()
	_, err := b.Route(ctx, reply) // a requester's reply topic of tenant-b
	require.NoError(t, err)
	replyID := strings.TrimPrefix(reply, equeue.ReplyTopicPrefix)
	_, err = e.Topic(ctx, equeue.ReplyTopicPrefix+"tenant-b:"+replyID)
	require.NoError(t, err, "tenant-b's reply topic exists under the engine's name")
	var raw [32]byte
	_, _ = rand.Read(raw[:])
	noID := hex.EncodeToString(raw[:]) // a reply topic id of the same shape that nobody has

	// Each pair names what tenant-b has, then what nobody has; the second
	// answer, its own name put back to the first, must be the first.
	pairs := [][2]string{
		{"orders", "zzabsent"},
		{"g", "x7q"},
		{equeue.RetryTopic("g"), equeue.RetryTopic("x7q")},
		{equeue.DLQTopic("g"), equeue.DLQTopic("x7q")},
		{reply, equeue.ReplyTopicPrefix + noID},
		{"tenant-b:orders", "tenant-b:zzabsent"},
		{"tenant-b:g", "tenant-b:x7q"},
		{equeue.RetryTopic("tenant-b:g"), equeue.RetryTopic("tenant-b:x7q")},
		{equeue.DLQTopic("tenant-b:g"), equeue.DLQTopic("tenant-b:x7q")},
		{equeue.ReplyTopicPrefix + "tenant-b:" + replyID, equeue.ReplyTopicPrefix + "tenant-b:" + noID},
	}
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	before := stateOf(t, e, "tenant-b")
	methods := pb.File_equeue_v1_equeue_proto.Services().ByName("Broker").Methods()
	for i := 0; i < methods.Len(); i++ {
		m := methods.Get(i)
		for _, p := range pairs {
			have, haveErr := callRPC(t, conn, "tok-a", m, p[0])
			_, noneErr := callRPC(t, conn, "tok-a", m, p[1])
			require.Equal(t, haveErr == nil, noneErr == nil, "%s(%q) %v, %s(%q) %v: whether it fails tells what tenant-b has", m.Name(), p[0], haveErr, m.Name(), p[1], noneErr)
			if haveErr != nil {
				assert.Equal(t, status.Code(haveErr), status.Code(noneErr), "%s(%q) and %s(%q) fail alike", m.Name(), p[0], m.Name(), p[1])
				assert.Equal(t, status.Convert(haveErr).Message(), withName(status.Convert(noneErr).Message(), p), "%s: the error text tells what tenant-b has", m.Name())
				have = haveErr.Error()
			}
			assert.NotContains(t, have, "secret-b", "%s(%q) shows tenant-b's messages", m.Name(), p[0])
			assert.NotContains(t, have, replyID+"\n", "%s(%q) shows tenant-b's reply topic", m.Name(), p[0])
		}
	}
	assert.Equal(t, before, stateOf(t, e, "tenant-b"), "no call of tenant-a changed tenant-b")
}

// withName is text with the name of what nobody has (p[1]) put back to
// the name of what tenant-b has (p[0]): the two answers should then be
// the same. Only the part that differs is replaced, so a name that is
// also a word of the text does not get in the way.
func withName(text string, p [2]string) string {
	have, none := p[0], p[1]
	for len(have) > 0 && len(none) > 0 && have[0] == none[0] {
		have, none = have[1:], none[1:]
	}
	for len(have) > 0 && len(none) > 0 && have[len(have)-1] == none[len(none)-1] {
		have, none = have[:len(have)-1], none[:len(none)-1]
	}
	return strings.ReplaceAll(text, none, have)
}
