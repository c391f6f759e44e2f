package remote_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// TestNamespace_PrefixNamespacesReachNothingOfEachOther serves namespaces
// "ns" and "ns2", one name the start of the other, each with a topic,
// messages, a group with a dead letter, a delayed message, a reply topic
// and a topic of its own name. It calls every RPC of the Broker service,
// enumerated from its descriptor, with the token of one and names aimed
// at the other (its engine names, with the shorter namespace's name cut
// off them or not, and its retry, dead-letter and reply topics), and
// checks that no answer shows the other's messages or the topic only it
// has, and that the other's state is unchanged.
func TestNamespace_PrefixNamespacesReachNothingOfEachOther(t *testing.T) {
	e := openEngine(t, nil)
	s := startServer(t, e, "", &remote.ServerOptions{
		Tokens:          map[string]remote.Rights{"tok-ns": remote.RightAll, "tok-ns2": remote.RightAll},
		TokenNamespaces: map[string]string{"tok-ns": "ns", "tok-ns2": "ns2"},
	})
	secret := map[string]string{"ns": "alpha-secret", "ns2": "beta-secret"}
	only := map[string]string{"ns": "alpha-only", "ns2": "beta-only"}
	ctx := ctxT(t)
	for _, ns := range []string{"ns", "ns2"} {
		c := dial(t, s.addr, &remote.ClientOptions{Token: "tok-" + ns})
		populate(t, c, secret[ns])
		require.NoError(t, c.CreateTopic(ctx, only[ns], 1))
		_, err := c.Route(ctx, c.NewReplyTopicName())
		require.NoError(t, err)
	}
	topics, err := e.Topics(ctx)
	require.NoError(t, err)
	for _, ns := range []string{"ns", "ns2"} {
		// The first pass's calls change the caller's own namespace (a
		// DeleteGroup of "g" deletes its dead letters), not the other's.
		require.Len(t, stateOf(t, e, ns).DLQ, 1, "%s has a dead letter", ns)
	}

	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	methods := pb.File_equeue_v1_equeue_proto.Services().ByName("Broker").Methods()
	for _, pair := range [][2]string{{"ns", "ns2"}, {"ns2", "ns"}} {
		caller, other := pair[0], pair[1]
		names := []string{"orders", "g", only[other], "2:" + only[other], "2:orders", "2:g", "%DLQ%2:g", "%RETRY%2:g", "%REPLY%2:x",
			other + ":orders", other + ":g", "%DLQ%" + other + ":g", "%RETRY%" + other + ":g", "%REPLY%" + other + ":x", ""}
		for _, ti := range topics {
			if !strings.Contains(ti.Name, other+":") {
				continue
			}
			// The engine's name, and the name with the caller's own
			// namespace cut off it ("ns2:orders" less "ns" is "2:orders").
			names = append(names, ti.Name, strings.Replace(ti.Name, caller, "", 1))
			if rest, ok := strings.CutPrefix(ti.Name, equeue.ReplyTopicPrefix); ok {
				names = append(names, equeue.ReplyTopicPrefix+strings.TrimPrefix(rest, other+":"))
			}
		}
		before := stateOf(t, e, other)
		for i := 0; i < methods.Len(); i++ {
			m := methods.Get(i)
			for _, name := range names {
				text, err := callRPC(t, conn, "tok-"+caller, m, name)
				if err != nil {
					text = err.Error()
				}
				assert.NotContains(t, text, secret[other], "%s(%q) by %s shows %s's messages", m.Name(), name, caller, other)
				if !strings.Contains(name, only[other]) { // else an error may quote the name given
					assert.NotContains(t, text, only[other], "%s(%q) by %s shows %s's topic", m.Name(), name, caller, other)
				}
			}
		}
		assert.Equal(t, before, stateOf(t, e, other), "no call of %s changed %s", caller, other)
	}
}
