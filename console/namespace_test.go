package console_test

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
	"github.com/equeue-go/equeue/remote"
)

// TestConsole_NamespaceSeesNothingOfOtherNamespaces runs the console on
// namespace tenant-a, in process (its Namespace view) and over remote
// with a token scoped to tenant-a, while the default namespace holds the
// seeded topics, groups, dead and delayed letters and tenant-b a topic of
// its own: no page shows any of them, a page naming one of them answers
// as it does for a name nobody has, and no action changes them.
func TestConsole_NamespaceSeesNothingOfOtherNamespaces(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	sd := seed(t, e)
	b, err := e.Namespace("tenant-b")
	require.NoError(t, err)
	require.NoError(t, b.CreateTopic(ctx, "orders", 1))
	_, err = b.Append(ctx, &equeue.AppendRequest{Topic: "orders", Messages: []*equeue.Message{{Body: []byte("secret-b")}}})
	require.NoError(t, err)
	a, err := e.Namespace("tenant-a")
	require.NoError(t, err)
	require.NoError(t, a.CreateTopic(ctx, "mine", 1))

	srv, err := remote.NewServer(e, &remote.ServerOptions{Tokens: map[string]remote.Rights{"tok-a": remote.RightAll}, TokenNamespaces: map[string]string{"tok-a": "tenant-a"}})
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-served })
	cl, err := remote.Dial(lis.Addr().String(), &remote.ClientOptions{Token: "tok-a"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })

	// What the other namespaces hold, which no page may show.
	secrets := []string{"secret-b", "customer-", "poison", "payment", "reminder", "billing", "audit", "tenant-b", "tenant-a:"}
	// The seeded names, and names of the same kind nobody has.
	absent := strings.NewReplacer("orders", "zzabsent", "billing", "x7q", "audit", "x8q")
	paths := append(append([]string{}, pages...), "topics/tenant-b:orders", "topics/tenant-b:orders/messages", "topics/%25RETRY%25audit", "groups/tenant-b:billing")
	for _, br := range []struct {
		name string
		b    console.Broker
	}{{"view", a}, {"remote", cl}} {
		s := serve(t, br.b, console.Options{})
		over := s.get(t, prefix)
		require.Equal(t, http.StatusOK, over.status, over.body)
		assert.Contains(t, over.body, "mine", "%s: the overview shows tenant-a's topic", br.name)
		for _, p := range paths {
			have := s.get(t, prefix+p)
			none := s.get(t, prefix+absent.Replace(p))
			assert.Equal(t, none.status, have.status, "%s: %s and %s answer alike", br.name, p, absent.Replace(p))
			for _, secret := range secrets {
				if !strings.Contains(p, secret) { // else the page may quote the name asked for
					assert.NotContains(t, have.body, secret, "%s: %s shows the other namespaces' %q", br.name, p, secret)
				}
			}
		}
		assert.Contains(t, s.get(t, prefix+"delayed").body, `<b id="delayed-count">0</b>`, "%s: the other namespaces' delayed messages are not counted", br.name)

		tok := csrf(t, s.get(t, prefix+"topics/mine"))
		for _, w := range writes(tok) {
			have := s.post(t, prefix+w.path, w.form)
			none := s.post(t, prefix+absent.Replace(w.path), w.form)
			assert.Equal(t, none.status, have.status, "%s: POST %s and %s answer alike", br.name, w.path, absent.Replace(w.path))
		}
	}
	assertUnchanged(t, ctx, sd)
	ti, err := b.Topic(ctx, "orders")
	require.NoError(t, err)
	assert.Len(t, ti.Queues, 1, "tenant-b's topic is unchanged")
	assert.True(t, ti.Queues[0].Writable)
}
